package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// refStore is a DocStore over a MemStore: CandidateRefs strips each
// candidate to the fields DocStore promises, Docs reads the documents
// upserted, and it records what Docs was asked for. gone ids are missing
// from Docs (deleted between the two phases).
type refStore struct {
	*MemStore
	mu    sync.Mutex
	docs  map[string]Doc
	reads [][]string
	gone  map[string]bool
}

func newRefStore() *refStore {
	return &refStore{MemStore: NewMemStore(), docs: map[string]Doc{}, gone: map[string]bool{}}
}

func (s *refStore) Upsert(ctx context.Context, docs []Doc) error {
	s.mu.Lock()
	for _, d := range docs {
		d.Vector = nil
		s.docs[d.ID] = d
	}
	s.mu.Unlock()
	return s.MemStore.Upsert(ctx, docs)
}

func (s *refStore) CandidateRefs(ctx context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error) {
	cs, err := s.MemStore.Candidates(ctx, v, text, f, k)
	for i := range cs {
		d := cs[i].Doc
		cs[i].Doc = Doc{ID: d.ID, Scope: d.Scope}
	}
	return cs, err
}

func (s *refStore) Docs(_ context.Context, ids []string, f Filter) (map[string]Doc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, slices.Clone(ids))
	out := map[string]Doc{}
	for _, id := range ids {
		if d, ok := s.docs[id]; ok && !s.gone[id] && f.Admits(&d) {
			out[id] = d
		}
	}
	return out, nil
}

// docstoreFixture is 90 memories of random words (fixed seed) from a
// small vocabulary, in three scopes, with varied evidence and usage, and
// a group of 14 with the same words (near-duplicates: Jaccard 1) that the
// query "alpha bravo charlie" ranks first, so collapsing them needs more
// documents than the first read brings.
func docstoreFixture() []Doc {
	vocab := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	scopes := []string{"project:p", "team:t", "org:o"}
	r := rand.New(rand.NewPCG(11, 2))
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	var docs []Doc
	for i := 0; i < 76; i++ {
		docs = append(docs, Doc{ID: fmt.Sprintf("m%02d", i), Scope: scopes[i%3], Title: words(3), Description: words(6),
			Content: words(8), Outcome: []string{"success", "failure"}[i%2], Confidence: 0.5 + float64(i%5)/10,
			Evidence: i % 9, UsageCount: i % 7, SourceSessions: []string{fmt.Sprintf("s%d", i%11)}})
	}
	for i := 0; i < 14; i++ {
		docs = append(docs, Doc{ID: fmt.Sprintf("dup%02d", i), Scope: scopes[i%3], Title: "alpha bravo charlie", Description: "alpha bravo charlie delta",
			Content: "charlie", Outcome: "success", Confidence: 0.9, Evidence: i, UsageCount: 1, SourceSessions: []string{fmt.Sprintf("d%d", i)}})
	}
	return docs
}

func docstoreIndex(t *testing.T, vs VectorStore, docs []Doc) *Index {
	t.Helper()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) { return slices.Clone(docs), nil, nil }}
	return NewIndex(store, embedder.WordHash{Dims: 16}, vs, src)
}

// Index over a DocStore (candidate refs, then the documents of the best
// few) returns what it returns over the same store's Candidates, for
// every ranking, limit and filter tried, and reads far fewer documents
// than there are candidates; near-duplicates collapsed past the first
// read make it read more. FusionAlpha, which reads evidence and usage,
// takes Candidates.
func TestSearchTwoPhaseSameResult(t *testing.T) {
	docs := docstoreFixture()
	one := docstoreIndex(t, NewMemStore(), docs)
	rs := newRefStore()
	two := docstoreIndex(t, rs, docs)
	rankings := map[string]Ranking{"default": DefaultRanking, "rrf": OtherRanking, "alpha": {Fusion: FusionAlpha, DuplicateJaccard: 0.9},
		"score": {Fusion: FusionScore, VectorWeight: 1, LexicalWeight: 2}}
	queries := []Query{
		{Text: "alpha bravo charlie"},
		{Text: "alpha bravo charlie", Limit: 20},
		{Text: "delta echo", Limit: 1},
		{Text: "kilo lima mike", Limit: 3, Outcome: "failure"},
		{Text: "golf hotel", Limit: 20, Scope: ScopeTeam},
		{Text: "oscar papa india", Readable: func(sc string) bool { return sc != "org:o" }, ExcludeSourceSession: "s3"},
	}
	for name, r := range rankings {
		one.SetRanking(r)
		two.SetRanking(r)
		for _, q := range queries {
			rs.mu.Lock()
			rs.reads = nil
			rs.mu.Unlock()
			want, err := one.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := two.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %q limit %d: two-phase\n%+v\nwant\n%+v", name, q.Text, q.Limit, got, want)
			}
			read := 0
			for _, ids := range rs.reads {
				read += len(ids)
			}
			if name == "alpha" { // reads evidence and usage: Candidates, one phase
				if read != 0 {
					t.Errorf("alpha, %q: %d documents read by Docs, want Candidates alone", q.Text, read)
				}
				continue
			}
			if len(want.Memories) > 0 && (read == 0 || q.Limit < 20 && read >= want.TotalFound) {
				t.Errorf("%s, %q: read %d documents for %d hits of %d found", name, q.Text, read, len(want.Memories), want.TotalFound)
			}
			if name == "default" && q.Text == "alpha bravo charlie" && q.Limit == 0 && len(rs.reads) < 2 {
				t.Errorf("%q: %d document reads, want a second one past the 14 near-duplicates", q.Text, len(rs.reads))
			}
		}
	}
}

// A candidate whose document is gone by the time Index reads it (deleted
// between the two phases) is left out of the hits; the next one takes
// its place.
func TestSearchTwoPhaseDocGone(t *testing.T) {
	docs := docstoreFixture()
	rs := newRefStore()
	ix := docstoreIndex(t, rs, docs)
	q := Query{Text: "kilo lima mike", Limit: 3}
	before, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Memories) != 3 {
		t.Fatalf("fixture: %d hits, want 3", len(before.Memories))
	}
	first := before.Memories[0].ID
	rs.gone[first] = true
	after, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range after.Memories {
		ids = append(ids, h.ID)
	}
	if len(ids) != 3 || slices.Contains(ids, first) || ids[0] != before.Memories[1].ID || ids[1] != before.Memories[2].ID {
		t.Fatalf("hits %v after %s went, before %+v", ids, first, before.Memories)
	}
}

// A document the vector store holds but the projections do not (another
// deployment's on the same Weaviate, a directory replaced) is no hit: it
// answered 404 to a read and dead-lettered its usage event (an operator's
// walkthrough, 2026-11-30). The next one takes its place.
func TestSearchTwoPhaseLeavesOutGhosts(t *testing.T) {
	docs := docstoreFixture()
	known := map[string]bool{}
	for _, d := range docs {
		known[d.ID] = true
	}
	rs := newRefStore()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) {
			if ids == nil {
				return slices.Clone(docs), nil, nil
			}
			var found []Doc
			var gone []string
			for _, id := range ids {
				if !known[id] {
					gone = append(gone, id)
					continue
				}
				for _, d := range docs {
					if d.ID == id {
						found = append(found, d)
					}
				}
			}
			return found, gone, nil
		}}
	ix := NewIndex(store, embedder.WordHash{Dims: 16}, rs, src)
	q := Query{Text: "kilo lima mike", Limit: 3}
	before, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// another deployment's document, the best match by far
	ghost := Doc{ID: "ghost", Scope: "project:p", Title: "kilo lima mike", Description: "kilo lima mike kilo", Content: "kilo lima mike",
		Outcome: "success", Confidence: 0.9}
	vecs, err := embedder.WordHash{Dims: 16}.Embed(context.Background(), []string{EmbedText(Memories, ghost)})
	if err != nil {
		t.Fatal(err)
	}
	ghost.Vector = vecs[0]
	if err := rs.Upsert(context.Background(), []Doc{ghost}); err != nil {
		t.Fatal(err)
	}
	after, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var ids, want []string
	for i := range after.Memories {
		ids = append(ids, after.Memories[i].ID)
	}
	for i := range before.Memories {
		want = append(want, before.Memories[i].ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("hits %v with a ghost in the store, want %v as without it", ids, want)
	}
}
