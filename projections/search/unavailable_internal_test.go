package search

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// downStore is a MemStore whose Upsert fails as a server that did not
// answer within its retry budget does (weaviate's opError), counting calls.
type downStore struct {
	*MemStore
	upserts atomic.Int32
}

// Collection makes downStore a MultiStore whose every collection is
// itself, as one Weaviate server serves the three.
func (s *downStore) Collection(Collection) VectorStore { return s }

func (s *downStore) Upsert(ctx context.Context, docs []Doc) error {
	s.upserts.Add(1)
	return fmt.Errorf("weaviate: batch upsert: server unavailable after 14 attempts: connection refused: %w", ErrStoreUnavailable)
}

// A sync stops at the first collection whose store is unavailable: each
// collection waited its whole retry budget for the same server, so a
// killed Weaviate was named by /healthz after three budgets (about 75 s)
// instead of one (an operator's walkthrough, 2026-11-30).
func TestSyncStopsAtAnUnavailableStore(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var srcs []Source
	for _, col := range []Collection{Memories, Patterns, Tools} {
		docs := []Doc{{ID: string(col) + "-1", Title: "a " + string(col), Content: "c", Scope: "project:a"}}
		srcs = append(srcs, Source{Collection: col, Projection: string(col), IDOfKey: func(string) string { return "" },
			Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) { return docs, nil, nil }})
	}
	vs := &downStore{MemStore: NewMemStore()}
	ix := NewIndex(store, &countingEmbedder{}, vs, srcs...)
	err = ix.Sync(context.Background())
	if !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("Sync: %v, want ErrStoreUnavailable", err)
	}
	if n := vs.upserts.Load(); n != 1 {
		t.Fatalf("%d upserts for three collections on an unavailable store, want 1 (the first)", n)
	}
}

// A search that waits for the sync ahead of it names that sync's last
// failure, the store's, not only its own deadline (an operator's
// walkthrough, 2026-11-30).
func TestWaitingSearchNamesTheLastSyncFailure(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	docs := []Doc{{ID: "m1", Title: "a", Content: "c", Scope: "project:a"}}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) { return docs, nil, nil }}
	ix := NewIndex(store, &countingEmbedder{}, &downStore{MemStore: NewMemStore()}, src)
	if err := ix.Sync(context.Background()); err == nil {
		t.Fatal("Sync against a store that is down: no error")
	}
	ix.syncOnce.Do(func() {})
	ix.syncSlot <- struct{}{} // a sync under way
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = ix.syncAll(ctx, false)
	if !errors.Is(err, ErrStoreUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a sync waiting behind another: %v, want the wait and the last failure", err)
	}
}
