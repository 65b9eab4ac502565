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

// hangingStore is a MemStore whose Upsert hangs, while hang is set, until
// its context ends: a vector store that accepts connections and never
// answers (a SIGSTOPped Weaviate).
type hangingStore struct {
	*MemStore
	hang    atomic.Bool
	upserts atomic.Int32
}

func (s *hangingStore) Upsert(ctx context.Context, docs []Doc) error {
	s.upserts.Add(1)
	if s.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.MemStore.Upsert(ctx, docs)
}

// A search answers within SearchTimeout when the vector store hangs, and
// so does every search queued behind the hanging sync (each with its own
// budget, not the sum of those ahead of it), with ErrTimeout naming what
// it waited for; once the store answers again, the next search finds
// the document. Before, the sync lock was not context-aware and a search
// had no budget of its own: three searches against a silent Weaviate
// answered after 20–41 s.
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
	vs := &hangingStore{MemStore: NewMemStore()}
	vs.hang.Store(true)
	ix := NewIndex(store, &countingEmbedder{}, vs, src)

	const searches = 3
	type answer struct {
		err  error
		took time.Duration
	}
	answers := make(chan answer, searches)
	start := time.Now()
	for range searches {
		go func() {
			_, err := ix.Search(context.Background(), Query{Text: "partition owner", MinConfidence: new(float64)})
			answers <- answer{err, time.Since(start)}
		}()
	}
	queued := 0
	for range searches {
		select {
		case a := <-answers:
			if !errors.Is(a.err, ErrTimeout) || !strings.Contains(a.err.Error(), "300ms") {
				t.Fatalf("search against a hanging store: %v, want ErrTimeout naming the 300ms budget", a.err)
			}
			if strings.Contains(a.err.Error(), "waiting for the index sync ahead") {
				queued++
			}
			if a.took > 2*time.Second { // the budget and room for a loaded -race run
				t.Errorf("a search answered after %v, budget %v", a.took, SearchTimeout)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a search still waits 5 s after it started (budget %v)", SearchTimeout)
		}
	}
	if queued == 0 {
		t.Fatalf("no search waited behind another's sync (%d upserts): the test did not queue them", vs.upserts.Load())
	}
	vs.hang.Store(false)
	res, err := ix.Search(context.Background(), Query{Text: "partition owner", MinConfidence: new(float64)})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "m1" {
		t.Fatalf("after the store answers again: %+v, %v", res, err)
	}
}
