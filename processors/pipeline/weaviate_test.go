package pipeline_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// The real Weaviate server is stopped mid-run: the processors go on, the
// vector store's lag grows and shows in /metrics, and after the restart it
// catches up with nothing lost.
func TestWeaviateDownAndBack(t *testing.T) {
	srv := weaviatetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	vs, err := weaviate.New(ctx, weaviate.Config{Host: srv.Host, ClassPrefix: "Pipeline", RetryMaxElapsed: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", VectorStore: vs})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sess := sampleEvents(t, 8)
	publish := func(from, to int) {
		for _, envs := range sess[from:to] {
			if err := p.Producer.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	synced := func(within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for p.Search.Index.Pending() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("vector store still %d memories behind after %v", p.Search.Index.Pending(), within)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	publish(0, 4)
	synced(60 * time.Second)

	srv.Kill()
	publish(4, 8) // the processors do not wait for Weaviate
	time.Sleep(2 * time.Second)
	if p.Search.Index.Pending() == 0 {
		t.Fatal("no lag while Weaviate is down")
	}
	if got := gauge(t, p, "chronicle_vector_store_pending_documents"); got == 0 {
		t.Fatal("the lag is not visible in the metrics")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	synced(90 * time.Second)
	bank, _ := memories.ComputeStats(p.Store)
	if n, err := vs.Len(ctx); err != nil || n != bank.Memories {
		t.Fatalf("Weaviate holds %d memories, the bank %d (%v)", n, bank.Memories, err)
	}
	// Coordination patterns and tools caught up too.
	npat := 0
	if err := sessions.EachPattern(p.Store, func(sessions.Pattern) bool { npat++; return true }); err != nil {
		t.Fatal(err)
	}
	g, err := toolgraph.Load(p.Store)
	if err != nil {
		t.Fatal(err)
	}
	for c, want := range map[search.Collection]int{search.Patterns: npat, search.Tools: g.NumTools()} {
		if n, err := vs.Collection(c).Len(ctx); err != nil || n != want || want == 0 {
			t.Fatalf("Weaviate holds %d %s documents, the projection %d (%v)", n, c, want, err)
		}
	}
	// Every object is in the vector index too: a query vector with k above
	// the collection's size finds them all (the restarted server once kept
	// objects written while it recovered out of its vector index).
	emb, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	qv, err := emb.Embed(ctx, []string{"search direct flight"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range search.Collections() {
		n, err := vs.Collection(c).Len(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := vs.Collection(c).Candidates(ctx, qv[0], "", search.Filter{}, n+10)
		if err != nil || len(cs) != n {
			t.Fatalf("%s: %d of %d objects found by vector after the restart (%v)", c, len(cs), n, err)
		}
	}
	zero := 0.0
	res, err := p.Search.Search(ctx, search.Query{Text: sess[7][0].SessionID, MinConfidence: &zero, Limit: 20})
	if err != nil || len(res.Memories) == 0 {
		t.Fatalf("search after the restart: %+v %v", res, err)
	}
	res, err = p.Search.Search(ctx, search.Query{Text: "search direct flight", Collection: search.Tools, Limit: 3})
	if err != nil || !slices.ContainsFunc(res.Memories, func(h search.Hit) bool { return h.ID == "search_direct_flight" }) {
		t.Fatalf("tool search after the restart: %+v %v", res, err)
	}
}

func gauge(t *testing.T, p *pipeline.Pipeline, name string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
