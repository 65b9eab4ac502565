package pair_test

// Integration test through pipeline.Start. It runs only once
// events/types.go registers pair.context.retrieved.v1 (topic
// chronicle.learned, derived, key field session_id): until then
// events.Derive rejects the type and the test fails saying so. It uses the
// pipeline's own pair worker when pipeline.Start runs one, and otherwise
// runs the worker on a second processors.Runner against the pipeline's
// broker and store, so it holds whether the worker is wired into Start
// unconditionally, behind a Config switch, or not yet.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The PAIR loop on a running Chronicle: a failed session gets a context on
// chronicle.learned, its successful revision (iteration 2) records a
// pair_improvement_completed memory in the memory bank with confidence
// final_score / 100 and exactly one pair_improvement_completed minute on
// its parent, a failed third iteration gets stop_iteration_limit, and a
// replay rebuilds the sessions and memories projections as live.
func TestPipelinePAIRLoop(t *testing.T) {
	if ti, ok := events.Lookup(pair.ContextRetrieved); !ok || ti.Topic != events.TopicLearned || !ti.Derived || ti.KeyField != "session_id" {
		t.Fatalf("events registry: %s is %+v (registered: %v); add it to events/types.go (topic chronicle.learned, derived, key field session_id)", pair.ContextRetrieved, ti, ok)
	}
	sc := getScenario(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2, Embedder: sharedEmbedder(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var own []processors.Worker
	if !slices.ContainsFunc(p.Workers, func(w processors.Worker) bool { return w.Name() == "pair" }) {
		t.Log("pipeline.Start runs no pair worker: running it on a second runner")
		own = []processors.Worker{&pair.Worker{Store: p.Store, Index: p.Search.Index, Producer: p.Producer}}
		r, err := processors.NewRunner(processors.RunnerConfig{Brokers: p.Broker.Addrs(), Store: p.Store, Processors: []processors.Processor{noop{}}, Workers: own})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		select {
		case <-r.Running():
		case err := <-done:
			t.Fatalf("pair runner: %v", err)
		case <-ctx.Done():
			t.Fatal("pair runner did not start")
		}
	}
	// caught up: the pipeline (its processors, workers and outbox) and our
	// own pair worker, twice in a row
	waitCaughtUp := func() {
		t.Helper()
		for streak := 0; streak < 2; {
			if err := p.WaitCaughtUp(ctx, nil); err != nil {
				t.Fatal(err)
			}
			lag, err := processors.WorkerLag(ctx, p.Admin(), own)
			if err != nil {
				t.Fatal(err)
			}
			if lag == 0 {
				streak++
			} else {
				streak = 0
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	publish := func(envs []events.Envelope) {
		t.Helper()
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		waitCaughtUp()
	}
	for _, envs := range append(sc.others, sc.good) {
		publish(envs)
	}
	publish(sc.failed)
	r2, r3 := "pair-it/revision-2", "pair-it/revision-3"
	publish(rekey(t, sc.good, r2, 2, sc.failedID))
	publish(rekey(t, sc.failed, r3, 3, r2))

	// the contexts on chronicle.learned, keyed by session id
	// read_committed, as every Chronicle consumer and subscriber reads: a
	// worker transaction aborted under load (its outputs written again in
	// the next) leaves a copy only a read_uncommitted consumer sees
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicLearned)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]pair.Context{}
	ids := map[string]int{}
	where := map[string][]string{}
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d contexts on %s, want 2 (%v)", len(got), events.TopicLearned, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			env, err := events.FromRecord(r)
			if err != nil {
				t.Errorf("record on %s: %v", events.TopicLearned, err)
				return
			}
			if env.Type != pair.ContextRetrieved {
				return
			}
			var c pair.Context
			if err := env.Decode(&c); err != nil {
				t.Fatal(err)
			}
			if string(r.Key) != events.EntityKey(env.EffectiveScope(), c.SessionID) || env.Source != pair.Source || env.CausationID == "" {
				t.Errorf("context record key %q source %q causation %q for %s", r.Key, env.Source, env.CausationID, c.SessionID)
			}
			ids[env.ID]++
			where[env.ID] = append(where[env.ID], fmt.Sprintf("p%d@%d cause %s", r.Partition, r.Offset, env.CausationID))
			got[c.SessionID] = c
		})
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("context %s written %d times: %v", id, n, where[id])
		}
	}
	first, ok := got[sc.failedID]
	if !ok || first.Iteration != 1 || first.NextIteration != 2 || first.Recommendation != pair.ReviseWithPatterns || len(first.Gaps) == 0 {
		t.Fatalf("context of the failed session: %+v", first)
	}
	goodMem := memoriesOf(t, p.Store, sc.goodID)
	if len(goodMem) != 1 {
		t.Fatalf("memories of the successful trial: %+v", goodMem)
	}
	found := false
	for _, g := range first.Gaps {
		for _, grp := range g.Patterns {
			for _, e := range grp.Examples {
				found = found || e.MemoryID == goodMem[0].ID
				if e.SuccessRate == nil || *e.SuccessRate != 1 {
					t.Errorf("example %s success rate %v", e.MemoryID, e.SuccessRate)
				}
			}
		}
	}
	if !found {
		t.Errorf("the successful trial's strategy is not among the patterns: %+v", first.Gaps)
	}
	last, ok := got[r3]
	if !ok || last.Iteration != 3 || last.ParentSession != r2 || last.Recommendation != pair.StopIterationLimit || last.NextIteration != 0 {
		t.Fatalf("context of iteration 3: %+v", last)
	}
	if _, ok := got[r2]; ok {
		t.Fatal("a context for the successful revision")
	}

	// the improvement memory, applied by the memory bank
	var imp []memories.Memory
	if err := memories.Each(p.Store, func(m memories.Memory) bool {
		if slices.Contains(m.Tags, pair.ImprovementTag) {
			imp = append(imp, m)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(imp) != 1 {
		t.Fatalf("%d pair_improvement_completed memories, want 1", len(imp))
	}
	m := imp[0]
	scope := sc.good[0].EffectiveScope()
	improved, ok, err := sessions.Get(p.Store, events.EntityKey(scope, r2))
	if err != nil || !ok || improved.Evaluation == nil || improved.Evaluation.Composite < pair.PassComposite {
		t.Fatalf("improved session %s: %+v (%v)", r2, improved, err)
	}
	// PAIR design: the memory's confidence is final_score / 100
	wantConf := pair.ImprovementConfidence(improved.Evaluation.Composite)
	if !slices.Equal(m.SourceSessions, []string{r2}) || m.Source != "distilled" || m.Outcome != "success" || m.Confidence != wantConf || wantConf < 0.95 ||
		!strings.HasPrefix(m.Title, "PAIR improvement: ") || m.Scope != scope {
		t.Fatalf("improvement memory %+v, want confidence %v", m, wantConf)
	}

	// exactly one pair_improvement_completed minute, on the parent
	// session: once in the log (chronicle.sessions, keyed by the parent)
	// and once in the parent's projected trace
	sl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicSessions)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	sessEnd, err := p.Admin().ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	sessEnd.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var minutes []events.Envelope
	for len(left) > 0 {
		fs := sl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", events.TopicSessions, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			env, err := events.FromRecord(r)
			if err != nil || env.Type != events.MinuteRecorded {
				return
			}
			var md events.MinuteData
			if err := env.Decode(&md); err != nil {
				t.Fatal(err)
			}
			if md.EventType == pair.ImprovementTag {
				if string(r.Key) != events.EntityKey(scope, sc.failedID) {
					t.Errorf("minute record key %q, want the parent's", r.Key)
				}
				minutes = append(minutes, env)
			}
		})
	}
	if len(minutes) != 1 {
		t.Fatalf("%d %s minutes in the log, want 1", len(minutes), pair.ImprovementTag)
	}
	var md events.MinuteData
	var im pair.ImprovementMinute
	if err := minutes[0].Decode(&md); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(md.Data, &im); err != nil {
		t.Fatal(err)
	}
	if minutes[0].SessionID != sc.failedID || minutes[0].Source != pair.Source || md.Actor != pair.MinuteActor || im.ImprovedSession != r2 ||
		im.Iteration != 2 || im.MemoryID != m.ID || im.Confidence != wantConf || im.FinalScore != improved.Evaluation.Composite ||
		im.ParentComposite >= pair.PassComposite || len(im.FixedGaps) == 0 {
		t.Fatalf("minute %+v data %+v", minutes[0], im)
	}
	trace, err := sessions.Trace(p.Store, events.EntityKey(scope, sc.failedID))
	if err != nil {
		t.Fatal(err)
	}
	inTrace := 0
	for _, it := range trace {
		if it.Type == events.MinuteRecorded && it.ID == minutes[0].ID {
			inTrace++
		}
	}
	if inTrace != 1 {
		t.Fatalf("the minute is %d times in the parent's trace, want 1", inTrace)
	}

	// replay = live for the projections the improvement writes to
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: []processors.Processor{sessions.Processor{}, memories.Processor{}}}); err != nil {
		t.Fatal(err)
	}
	rd, err := rep.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sessions.Name, memories.Name} {
		if live.Rows[name] == 0 || rd.Projections[name] != live.Projections[name] {
			t.Errorf("%s: live %s (%d rows), replay %s (%d rows)", name, live.Projections[name], live.Rows[name], rd.Projections[name], rd.Rows[name])
		}
	}
	end, err := p.Admin().ListEndOffsets(ctx, string(events.TopicDeadLetter))
	if err != nil {
		t.Fatal(err)
	}
	end.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("%d events dead-lettered on partition %d", o.Offset, o.Partition)
		}
	})
}

// noop is the processor a Runner needs besides the worker.
type noop struct{}

func (noop) Name() string                                  { return "pair-test-noop" }
func (noop) Topics() []events.Topic                        { return []events.Topic{events.TopicLearned} }
func (noop) Apply(*projections.Tx, *events.Envelope) error { return nil }
