package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// Query.IDs admits its documents wherever they rank among the whole
// collection: GET /v1/tools/search's scope filter keeps the tools of one
// scope's tool graph, and a scope's tools outside the CandidatesPerQuery
// best of every scope's were never found (the filter ran on the candidates
// only), though they match the query as well as those returned.
func TestIDsFilterLooksPastTheCandidates(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var docs []Doc
	for i := range CandidatesPerQuery + 100 {
		docs = append(docs, Doc{ID: fmt.Sprintf("tool-%04d", i), Scope: ToolScope, Title: "lookup", Content: "lookup record", Outcome: "success", Confidence: 0.8})
	}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) {
			return append([]Doc(nil), docs...), nil, nil
		}}
	ix := NewIndex(store, &countingEmbedder{}, nil, src)
	ctx := context.Background()
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// the first and the last tool by id: ties are broken by id, so one
	// of them is outside the candidates of an unfiltered search
	for _, want := range []string{docs[0].ID, docs[len(docs)-1].ID} {
		res, err := ix.Search(ctx, Query{Text: "lookup record", MinConfidence: new(float64), IDs: func(id string) bool { return id == want }})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Memories) != 1 || res.Memories[0].ID != want {
			var got []string
			for _, h := range res.Memories {
				got = append(got, h.ID)
			}
			t.Errorf("IDs admitting only %s: got %v (total_found %d)", want, got, res.TotalFound)
		}
	}
}
