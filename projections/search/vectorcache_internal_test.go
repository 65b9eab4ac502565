package search

import (
	"context"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// A document whose text equals another scope's is embedded for its own
// scope, not found in the vector cache: a cache keyed by text alone
// answered a tenant's search right after its recording one embedding
// sooner when another tenant held the same title and description (an
// oracle for guessed texts). A document of the same scope and text is
// still a cache hit, and the vectors cached by text alone before are
// dropped when an Index is built.
func TestDocumentVectorCacheIsPerScope(t *testing.T) {
	dir := t.TempDir()
	store, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.SetCache(legacyVectorPrefix+"use-lite/512/0123", []byte("old")); err != nil {
		t.Fatal(err)
	}
	const title, desc = "Rebook a delayed flight", "Secret playbook of tenant a"
	var docs []Doc
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(k string) string { return k },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) {
			return append([]Doc(nil), docs...), nil, nil
		}}
	emb := &countingEmbedder{}
	ix := NewIndex(store, emb, nil, src)
	if _, ok, err := store.GetCache(legacyVectorPrefix + "use-lite/512/0123"); err != nil || ok {
		t.Errorf("a vector cached by text alone is still stored (%v, %v)", ok, err)
	}
	ctx := context.Background()
	// syncs reports how many texts a sync of docs ran through the model.
	syncs := func(step string, want int) {
		t.Helper()
		ix.mu.Lock()
		ix.cols[0].loaded = false // push every document again
		ix.mu.Unlock()
		before := emb.texts
		if err := ix.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := emb.texts - before; got != want {
			t.Errorf("%s: the model embedded %d texts, want %d", step, got, want)
		}
	}
	docs = []Doc{{ID: "a1", Scope: "project:a", Title: title, Description: desc, Outcome: "success", Confidence: 0.8}}
	syncs("tenant a's memory", 1)
	docs = append(docs, Doc{ID: "b1", Scope: "project:b", Title: title, Description: desc, Outcome: "success", Confidence: 0.8})
	syncs("tenant b's memory of the same text", 1)
	docs = append(docs, Doc{ID: "a2", Scope: "project:a", Title: title, Description: desc, Outcome: "failure", Confidence: 0.5})
	syncs("a second memory of tenant a with that text", 0)
}
