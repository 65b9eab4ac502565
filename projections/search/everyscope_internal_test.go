package search

import (
	"context"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// filterRecorder is a VectorStore that records the filter of each
// candidate query (and holds nothing).
type filterRecorder struct{ got []Filter }

func (r *filterRecorder) Upsert(context.Context, []Doc) error    { return nil }
func (r *filterRecorder) Delete(context.Context, []string) error { return nil }
func (r *filterRecorder) Len(context.Context) (int, error)       { return 0, nil }
func (r *filterRecorder) Candidates(_ context.Context, _ []float32, _ string, f Filter, _ int) ([]Candidate, error) {
	r.got = append(r.got, f)
	return nil, nil
}

// Index.Search tells the store a searcher of every scope (read scopes
// holding "*", or neither read scopes nor a readable filter), so that a
// store may take BM25's statistics over all documents, and no other
// searcher: one reading some scopes, or a readable filter alone.
func TestSearchTellsTheStoreASearcherOfEveryScope(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec := &filterRecorder{}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) { return nil, nil, nil }}
	ix := NewIndex(store, &countingEmbedder{}, rec, src)
	all := func(string) bool { return true }
	for _, c := range []struct {
		name string
		q    Query
		want bool
	}{
		{"read scopes *", Query{Text: "rebook", ReadScopes: []string{"*"}, Readable: all}, true},
		{"no read scopes, no readable filter", Query{Text: "rebook"}, true},
		{"read scopes project:a", Query{Text: "rebook", ReadScopes: []string{"project:a"}, Readable: func(s string) bool { return s == "project:a" }}, false},
		{"a readable filter alone", Query{Text: "rebook", Readable: all}, false},
	} {
		rec.got = nil
		if _, err := ix.Search(context.Background(), c.q); err != nil {
			t.Fatal(err)
		}
		if len(rec.got) != 1 || rec.got[0].EveryScope != c.want {
			t.Errorf("%s: filters %+v, want one with EveryScope %v", c.name, rec.got, c.want)
		}
	}
}
