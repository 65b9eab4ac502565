package search

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections"
)

// The background sync waits while processors commit, at most its bound,
// and goes at once when they are idle.
func TestWaitIdleYieldsToProcessors(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ix := &Index{store: store}
	start := time.Now()
	ix.waitIdle(context.Background(), 5*time.Second) // a store nothing committed to
	if d := time.Since(start); d > time.Second {
		t.Fatalf("waited %v of its 5 s bound with no processor running", d)
	}
	ix.sinceCommit = busy
	start = time.Now()
	ix.waitIdle(context.Background(), 300*time.Millisecond)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("returned after %v while the processors were committing, want its 300 ms bound", d)
	}
}

// busy is an Index.sinceCommit of processors that commit all the time.
func busy() time.Duration { return 0 }

// countingEmbedder embeds every text as a fixed unit vector and records
// when each batch was embedded.
type countingEmbedder struct {
	mu      sync.Mutex
	batches []time.Time
	texts   int
}

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, time.Now())
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}
func (e *countingEmbedder) Model() string { return "counting" }
func (e *countingEmbedder) Dim() int      { return 2 }

// The background warm-up embeds WarmBatch texts at a time and, while the
// processors commit, waits its bound before each batch; then the
// background sync pushes only what is cached, and a search's Sync
// everything.
func TestWarmYieldsBetweenBatches(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	docs := make([]Doc, 3*WarmBatch)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("m%02d", i), Title: fmt.Sprintf("memory %d", i)}
	}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) { return docs, nil, nil }}
	emb := &countingEmbedder{}
	ix := NewIndex(store, emb, nil, src)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ix.sinceCommit = busy
	const bound = 150 * time.Millisecond
	start := time.Now()
	if err := ix.warm(ctx, bound); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if emb.texts != len(docs) || len(emb.batches) != 3 {
		t.Fatalf("embedded %d texts in %d batches, want %d in 3", emb.texts, len(emb.batches), len(docs))
	}
	if took < 3*bound {
		t.Fatalf("3 batches under a constant load took %v, want each to wait its %v bound", took, bound)
	}
	for i := 1; i < len(emb.batches); i++ {
		if gap := emb.batches[i].Sub(emb.batches[i-1]); gap < bound {
			t.Fatalf("batch %d came %v after the previous one, want ≥ %v", i, gap, bound)
		}
	}
	ix.sinceCommit = nil
	// everything is cached now: the sync embeds nothing more
	if err := ix.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if emb.texts != len(docs) {
		t.Fatalf("the sync after the warm-up embedded %d more texts", emb.texts-len(docs))
	}
	if n := ix.Pending(); n != 0 {
		t.Fatalf("%d documents pending after the sync", n)
	}
}
