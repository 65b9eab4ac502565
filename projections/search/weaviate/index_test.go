package weaviate

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// oneFetch hides a Store's search.DocStore methods: Index over it takes
// Candidates (whole documents in the candidate lists).
type oneFetch struct{ search.VectorStore }

// Index.Search over the Weaviate store gives the same result through the
// two-phase path (CandidateRefs, then Docs of the best few) as through
// Candidates, over gRPC and over GraphQL, for the bench corpus's texts,
// several filters and limits.
func TestIndexTwoPhaseSameResults(t *testing.T) {
	srv := sharedServer(t)
	docs := benchDocs(400)
	for i := range docs {
		docs[i].Vector, docs[i].Model = nil, ""
		if i%10 < 3 { // near-duplicates: the same words as the document before
			docs[i].Title, docs[i].Description, docs[i].Content = docs[i-i%10].Title, docs[i-i%10].Description, docs[i-i%10].Content
		}
	}
	src := search.Source{Collection: search.Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]search.Doc, []string, error) {
			return slices.Clone(docs), nil, nil
		}}
	for _, useGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", useGRPC), func(t *testing.T) {
			cfg := testConfig(srv)
			if useGRPC {
				cfg.GRPCHost = srv.GRPCHost
			}
			s := newTestStore(t, srv, cfg)
			index := func(vs search.VectorStore) *search.Index {
				ps, err := projections.Open(t.TempDir(), projections.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ps.Close() })
				return search.NewIndex(ps, embedder.WordHash{Dims: 32}, vs, src)
			}
			two, one := index(s), index(oneFetch{s})
			qs := benchQueries()
			queries := []search.Query{
				{Text: docs[0].Title},
				{Text: docs[1].Title + " " + docs[2].Description, Limit: 20},
				{Text: qs[0].text, Limit: 1},
				{Text: qs[1].text, Scope: "project:p1"},
				{Text: docs[5].Content, Outcome: "failure", Readable: func(sc string) bool { return sc != "team:t1" }},
				{Text: docs[7].Description, Scope: search.ScopeTeam, Limit: 10, ExcludeSourceSession: docs[7].SourceSessions[0]},
			}
			for i, q := range queries {
				want, err := one.Search(ctxT(t), q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := two.Search(ctxT(t), q)
				if err != nil {
					t.Fatal(err)
				}
				if len(want.Memories) == 0 {
					t.Fatalf("query %d %q: no hits (the test would compare nothing)", i, q.Text)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("query %d %q: two-phase\n%+v\nCandidates\n%+v", i, q.Text, got, want)
				}
			}
		})
	}
}
