package search

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// wipedStore is a MemStore whose server can lose everything: after wipe,
// the next candidate query finds its content gone and answers as the
// weaviate store does (ErrStoreReset, the collections created again empty).
type wipedStore struct {
	*MemStore
	wipe bool
}

func (s *wipedStore) lost() error {
	if !s.wipe {
		return nil
	}
	s.wipe, s.MemStore = false, NewMemStore()
	return fmt.Errorf("weaviate: collection Memory was gone from the server: %w", ErrStoreReset)
}

func (s *wipedStore) Candidates(ctx context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error) {
	if err := s.lost(); err != nil {
		return nil, err
	}
	return s.MemStore.Candidates(ctx, v, text, f, k)
}

// A search that meets ErrStoreReset makes the next sync push every
// document again, though none changed: the search after it finds the
// memory. Before, nothing was pending, no sync pushed anything, and the
// memory was gone from search for good (a walkthrough, 2026-11-30).
func TestStoreResetPushesEverythingAgain(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	docs := []Doc{{ID: "m1", Title: "check the partition owner first", Content: "ask the owner", Scope: "project:a"}}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) { return docs, nil, nil }}
	vs := &wipedStore{MemStore: NewMemStore()}
	ix := NewIndex(store, &countingEmbedder{}, vs, src)
	q := Query{Text: "partition owner", MinConfidence: new(float64)}
	if res, err := ix.Search(context.Background(), q); err != nil || len(res.Memories) != 1 {
		t.Fatalf("before: %+v, %v", res, err)
	}
	vs.wipe = true
	if _, err := ix.Search(context.Background(), q); !errors.Is(err, ErrStoreReset) {
		t.Fatalf("the search that finds the store emptied: %v, want ErrStoreReset", err)
	}
	res, err := ix.Search(context.Background(), q)
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "m1" {
		t.Fatalf("the search after: %+v, %v; want m1, pushed again", res, err)
	}
}
