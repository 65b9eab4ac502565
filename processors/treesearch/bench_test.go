package treesearch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections"
)

// expansionEvents is one expansion of node head of search id: the
// reservation, k children (f from 0.5 up) and the decision keeping the
// beam of W = 4, given the open set before it.
func expansionEvents(id string, n int, head string, depth int, open []treesearch.OpenEntry) ([]events.Envelope, []treesearch.OpenEntry) {
	seq0 := (n - 1) * 4 // nodes generated before this expansion
	const k, w = 4, 4
	var out []events.Envelope
	add := func(t events.Type, suffix string, d any) {
		env, _ := events.New(t, "bench", fmt.Sprintf("%s/e%d/%s", id, n, suffix), time.Now(), d)
		env.Scope = "project:bench"
		out = append(out, env)
	}
	add(events.SearchQuotaReserved, "res", events.SearchQuotaReservedData{SearchID: id, Expansion: n, NodeID: head, Tokens: 1000})
	var children []treesearch.OpenEntry
	var ids []string
	for i := 0; i < k; i++ {
		cid := treesearch.ChildID(head, i)
		state := fmt.Sprintf("%s state %d", id, n*k+i)
		g := float64(depth+1) * 0.01
		score := 1 - 0.1*float64(i+1)
		h := 1 - score
		f := g + h
		parent := head
		add(events.SearchNodeExpanded, cid, events.SearchNodeData{SearchID: id, NodeID: cid, ParentID: &parent, Expansion: n, Depth: depth + 1,
			State: state, StateDigest: treesearch.Digest(state), Candidate: "step " + state, G: g, H: &h, F: &f, Score: &score, TokensUsed: 100})
		children = append(children, treesearch.OpenEntry{ID: cid, F: f, Seq: seq0 + i + 1, Depth: depth + 1})
		ids = append(ids, cid)
	}
	kept, dropped := treesearch.NextFrontier(open, head, children, w, false)
	keptIDs, droppedIDs := []string{}, []string{}
	for _, o := range kept {
		keptIDs = append(keptIDs, o.ID)
	}
	for _, o := range dropped {
		droppedIDs = append(droppedIDs, o.ID)
	}
	add(events.SearchFrontierDecided, "dec", events.SearchFrontierDecidedData{SearchID: id, Expansion: n, NodeID: head, Children: ids, Kept: keptIDs, Dropped: droppedIDs, TokensUsed: 400, TokensRefunded: 600})
	return out, kept
}

func startEvent(id string) events.Envelope {
	env, _ := events.New(events.SearchStarted, "bench", id+"/started", time.Now(), events.SearchStartedData{SearchID: id, Goal: "bench", RootState: "root " + id,
		Config:   events.SearchConfig{BeamWidth: 4, K: 4, MaxDepth: 1000, CostPerStep: 0.01},
		Proposer: events.SearchComponent{Name: "bench", Version: "1"}, Evaluator: events.SearchComponent{Name: "bench", Version: "1"}})
	env.Scope = "project:bench"
	return env
}

// BenchmarkNodeExpansionToProjection measures the latency from producing a
// search event (reservation, node, frontier decision) on the embedded
// broker to the frontier projection having applied it (p50/p99 per event,
// the target is p99 ≤ 2 ms), next to its baseline: the same events
// applied straight to the store through the processor's Apply, without the
// broker, and the engine's generic path in the same run ("broker-sessions":
// one session event per probe into the sessions projection, as chronicle
// bench's latency probe). Each search runs 25 expansions of 4 children.
func BenchmarkNodeExpansionToProjection(b *testing.B) {
	const perSearch = 25
	b.Run("broker", func(b *testing.B) {
		ctx := context.Background()
		// the wait is on the commit hook, as chronicle bench's latency probe
		// (processors/bench): the first commit of the treesearch projection
		// that touches the search's row after the publish is the event's
		// (each is published alone and waited for, and every event of the
		// run rewrites its search's row). Re-reading and decoding the search
		// after every commit, with a 1 ms timer as fallback, added 0.08 ms at
		// the median and 0.5 ms at p99 to what was measured.
		var mu sync.Mutex
		waiting := map[string]chan struct{}{}
		hook := func(proj string, keys []string) {
			if proj != treesearch.Name {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if ch, ok := waiting[k]; ok {
					close(ch)
					delete(waiting, k)
				}
			}
		}
		p, err := pipeline.Start(ctx, pipeline.Config{DataDir: b.TempDir(), KafkaListen: "127.0.0.1:0",
			Processors: []processors.Processor{treesearch.Processor{}}, Embedder: noEmbedder{}, CommitHook: hook})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		var lat []time.Duration
		sent := map[string]int{}
		send := func(key string, env events.Envelope) {
			done := make(chan struct{})
			mu.Lock()
			waiting["s/"+key] = done
			mu.Unlock()
			t0 := time.Now()
			if err := p.Producer.Publish(ctx, env); err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
				lat = append(lat, time.Since(t0))
			case <-time.After(10 * time.Second):
				b.Fatalf("%s %s not applied within 10 s", env.Type, env.ID)
			}
			sent[key]++
		}
		b.ResetTimer()
		var open []treesearch.OpenEntry
		var key string
		for i := 0; i < b.N; i++ {
			n := i%perSearch + 1
			id := fmt.Sprintf("bench-%d", i/perSearch)
			if n == 1 {
				key = events.EntityKey("project:bench", id)
				send(key, startEvent(id))
				open = []treesearch.OpenEntry{{ID: treesearch.RootID, F: 1}}
			}
			head := open[0]
			envs, kept := expansionEvents(id, n, head.ID, head.Depth, open)
			for _, env := range envs {
				send(key, env)
			}
			open = kept
		}
		b.StopTimer()
		// every event was applied, none rejected: each search counts them all
		for key, n := range sent {
			if s, _, err := treesearch.Get(p.Store, key); err != nil || s.Seq != n {
				b.Fatalf("search %s applied %d events of %d (%v)", key, s.Seq, n, err)
			}
		}
		report(b, lat)
	})
	b.Run("broker-sessions", func(b *testing.B) {
		ctx := context.Background()
		var mu sync.Mutex
		waiting := map[string]chan struct{}{}
		hook := func(proj string, keys []string) {
			if proj != "sessions" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if ch, ok := waiting[k]; ok {
					close(ch)
					delete(waiting, k)
				}
			}
		}
		p, err := pipeline.Start(ctx, pipeline.Config{DataDir: b.TempDir(), KafkaListen: "127.0.0.1:0",
			Processors: []processors.Processor{sessions.Processor{}}, Embedder: noEmbedder{}, CommitHook: hook})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		var lat []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// as many events per op as the broker run: about 6.04
			for j := 0; j < 6; j++ {
				env, err := events.New(events.MinuteRecorded, "bench/latency", fmt.Sprintf("probe-%d-%d", i, j), time.Unix(1700000000, 0),
					events.MinuteData{EventType: "message", Actor: "assistant", Data: []byte(`{"content":"probe"}`)})
				if err != nil {
					b.Fatal(err)
				}
				env.SessionID = fmt.Sprintf("latency-%d-%d", i, j)
				done := make(chan struct{})
				mu.Lock()
				waiting["s/"+events.EntityKey(env.EffectiveScope(), env.SessionID)] = done
				mu.Unlock()
				t0 := time.Now()
				if err := p.Producer.Publish(ctx, env); err != nil {
					b.Fatal(err)
				}
				select {
				case <-done:
					lat = append(lat, time.Since(t0))
				case <-time.After(10 * time.Second):
					b.Fatalf("probe %s not projected within 10 s", env.ID)
				}
			}
		}
		b.StopTimer()
		report(b, lat)
	})
	b.Run("store-only", func(b *testing.B) {
		st, err := projections.Open(b.TempDir(), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var lat []time.Duration
		off := int64(0)
		apply := func(env events.Envelope) {
			t0 := time.Now()
			if _, err := st.Apply(treesearch.Name, projections.Position{Topic: string(events.TopicSearches), Offset: off}, &env, treesearch.Processor{}.Apply); err != nil {
				b.Fatal(err)
			}
			off++
			lat = append(lat, time.Since(t0))
		}
		b.ResetTimer()
		var open []treesearch.OpenEntry
		for i := 0; i < b.N; i++ {
			n := i%perSearch + 1
			id := fmt.Sprintf("bench-%d", i/perSearch)
			if n == 1 {
				apply(startEvent(id))
				open = []treesearch.OpenEntry{{ID: treesearch.RootID, F: 1}}
			}
			head := open[0]
			envs, kept := expansionEvents(id, n, head.ID, head.Depth, open)
			for _, env := range envs {
				apply(env)
			}
			open = kept
		}
		b.StopTimer()
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(float64(len(lat))/float64(b.N), "events/op")
}
