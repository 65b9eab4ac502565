package search

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections"
)

// hangingStore is a MemStore whose Upsert hangs, until release is closed
// or its context ends: a vector store that accepts connections and never
// answers (a SIGSTOPped Weaviate).
type hangingStore struct {
	*MemStore
	release chan struct{}
	upserts atomic.Int32
}

func (s *hangingStore) Upsert(ctx context.Context, docs []Doc) error {
	s.upserts.Add(1)
	select {
	case <-s.release:
		return s.MemStore.Upsert(ctx, docs)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A search answers within SearchTimeout when the index sync ahead of it
// hangs on the vector store (the background sync, which has no budget),
// and so does every other search queued behind it, each with its own
// budget, with ErrTimeout naming what it waited for; once the store
// answers, the next search finds the document. Before, the sync lock was
// not context-aware and a search had no budget of its own: three searches
// against a silent Weaviate answered after 80, 140 and 200 s.
func TestSearchBudgetWhenTheStoreHangs(t *testing.T) {
	defer func(d time.Duration) { SearchTimeout = d }(SearchTimeout)
	SearchTimeout = 300 * time.Millisecond
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	docs := []Doc{{ID: "m1", Title: "check the partition owner first", Content: "ask the owner", Scope: "project:a"}}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) { return docs, nil, nil }}
	vs := &hangingStore{MemStore: NewMemStore(), release: make(chan struct{})}
	ix := NewIndex(store, &countingEmbedder{}, vs, src)

	background := make(chan error, 1)
	go func() { background <- ix.Sync(context.Background()) }() // as Run's sync, without a budget
	for vs.upserts.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	const searches = 3
	type answer struct {
		err  error
		took time.Duration
	}
	answers := make(chan answer, searches)
	for range searches {
		go func() {
			start := time.Now()
			_, err := ix.Search(context.Background(), Query{Text: "partition owner", MinConfidence: new(float64)})
			answers <- answer{err, time.Since(start)}
		}()
	}
	for range searches {
		select {
		case a := <-answers:
			if !errors.Is(a.err, ErrTimeout) || !strings.Contains(a.err.Error(), "300ms") || !strings.Contains(a.err.Error(), "waiting for the index sync ahead") {
				t.Fatalf("search behind a hanging sync: %v, want ErrTimeout naming the 300ms budget and the sync it waited for", a.err)
			}
			if a.took > 2*time.Second { // the budget and room for a loaded -race run
				t.Errorf("a search answered after %v, budget %v", a.took, SearchTimeout)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a search still waits 5 s after it started (budget %v)", SearchTimeout)
		}
	}
	close(vs.release)
	if err := <-background; err != nil {
		t.Fatalf("the background sync once the store answers: %v", err)
	}
	res, err := ix.Search(context.Background(), Query{Text: "partition owner", MinConfidence: new(float64)})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "m1" {
		t.Fatalf("after the store answers again: %+v, %v", res, err)
	}
}
