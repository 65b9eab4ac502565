package search

import (
	"context"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// upsertCounter is a MemStore that counts the documents it is given.
type upsertCounter struct {
	*MemStore
	mu   sync.Mutex
	docs map[string]int
}

func (u *upsertCounter) Upsert(ctx context.Context, docs []Doc) error {
	u.mu.Lock()
	for _, d := range docs {
		u.docs[d.ID]++
	}
	u.mu.Unlock()
	return u.MemStore.Upsert(ctx, docs)
}

// A document whose rows changed but whose indexed fields did not (a
// memory a search returned: its retrievals changed) is not written to the
// vector store again; one whose fields changed is, and a full push writes
// every document. Before, every search wrote the memories it returned to
// the store again, unchanged, and Weaviate, which keeps an overwritten
// object's postings until it compacts them, scored BM25 negative and
// dropped them from filtered keyword queries (a Weaviate walkthrough,
// 2026-11-30).
func TestUnchangedDocumentIsNotWrittenAgain(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	docs := []Doc{{ID: "a1", Scope: "project:a", Title: "Rebook", Description: "a delayed flight", Outcome: "success", Confidence: 0.8},
		{ID: "a2", Scope: "project:a", Title: "Refund", Description: "a cancelled flight", Outcome: "success", Confidence: 0.8}}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(k string) string { return k },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) {
			var out []Doc
			for _, d := range docs {
				if ids == nil || contains(ids, d.ID) {
					out = append(out, d)
				}
			}
			return out, nil, nil
		}}
	vs := &upsertCounter{MemStore: NewMemStore(), docs: map[string]int{}}
	ix := NewIndex(store, &countingEmbedder{}, vs, src)
	ctx := context.Background()
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	dirty := func(ids ...string) {
		ix.mu.Lock()
		for _, id := range ids {
			ix.gen++
			ix.cols[0].dirty[id] = ix.gen
		}
		ix.mu.Unlock()
	}
	dirty("a1", "a2") // rows changed, indexed fields not
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if vs.docs["a1"] != 1 || vs.docs["a2"] != 1 {
		t.Fatalf("writes %v after a sync of unchanged documents, want one each (the first push)", vs.docs)
	}
	docs[1].Confidence = 0.6
	dirty("a1", "a2")
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if vs.docs["a1"] != 1 || vs.docs["a2"] != 2 {
		t.Fatalf("writes %v after a2's confidence changed, want a1 1, a2 2", vs.docs)
	}
	ix.mu.Lock()
	if n := len(ix.cols[0].dirty); n != 0 {
		t.Errorf("%d documents still dirty", n)
	}
	ix.cols[0].loaded = false // a full push
	ix.mu.Unlock()
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if vs.docs["a1"] != 2 || vs.docs["a2"] != 3 {
		t.Fatalf("writes %v after a full push, want a1 2, a2 3", vs.docs)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
