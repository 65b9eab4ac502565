package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// The tenant-isolation review's repro: project:b holds "Baggage note"
// (quokkaterm) and "Baggage memo" (wombatterm). Searching project:b for
// both words, the relevance and order must not change when another
// scope (project:a, which b's searcher cannot read) gains 15 memories
// with quokkaterm, then 40 with wombatterm, nor when they are deleted
// again. On the old store, N, document frequency and average length were
// the whole collection's: the note fell from 0.9684 to 0.7655, and the 40
// wombatterm memories flipped the order.
func TestScopedSearchIgnoresOtherScopes(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	docs := map[string]Doc{}
	var gone []string
	var ix *Index
	put := func(ds ...Doc) { // and mark them changed, as the commit hook would
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			docs[d.ID] = d
		}
		if ix != nil {
			ix.mu.Lock()
			ix.gen++
			for _, d := range ds {
				ix.cols[0].dirty[d.ID] = ix.gen
			}
			ix.mu.Unlock()
		}
	}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(_ *projections.Store, ids []string) ([]Doc, []string, error) {
			mu.Lock()
			defer mu.Unlock()
			out := make([]Doc, 0, len(docs))
			for _, d := range docs {
				out = append(out, d)
			}
			g := gone
			gone = nil
			return out, g, nil
		}}
	mem := func(id, scope, title, content string) Doc {
		return Doc{ID: id, Scope: scope, Title: title, Description: "a note", Content: content, Outcome: "success", Confidence: 0.8}
	}
	put(mem("note", "project:b", "Baggage note", "quokkaterm handle luggage carefully"),
		mem("memo", "project:b", "Baggage memo", "wombatterm weigh luggage before check-in"))
	ix = NewIndex(store, &countingEmbedder{}, nil, src)
	// every vector is the same (countingEmbedder): the order is BM25's
	ctx := context.Background()
	readsB := func(sc string) bool { return sc == "project:b" }
	queries := map[string]Query{
		"scope project:b":     {Text: "quokkaterm wombatterm", Scope: "project:b"},
		"token reading b":     {Text: "quokkaterm wombatterm", Readable: readsB},
		"b's kind, only b":    {Text: "quokkaterm wombatterm", Scope: ScopeProject, Readable: readsB},
		"team kind, a in org": {Text: "quokkaterm wombatterm", Scope: ScopeTeam},
	}
	put(mem("t-note", "team:b", "Baggage note", "quokkaterm handle luggage carefully"),
		mem("t-memo", "team:b", "Baggage memo", "wombatterm weigh luggage before check-in"))
	hits := func() map[string][]Hit {
		out := map[string][]Hit{}
		for name, q := range queries {
			res, err := ix.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Memories) != 2 {
				t.Fatalf("%s: %d hits, want 2: %+v", name, len(res.Memories), res.Memories)
			}
			out[name] = res.Memories
		}
		return out
	}
	before := hits()
	same := func(step string) {
		t.Helper()
		now := hits()
		for name := range queries {
			a, b := before[name], now[name]
			for i := range a {
				if a[i].ID != b[i].ID || a[i].Relevance != b[i].Relevance {
					t.Errorf("%s, %s: hit %d is %s %.4f, was %s %.4f", step, name, i, b[i].ID, b[i].Relevance, a[i].ID, a[i].Relevance)
				}
			}
		}
	}
	var other []string
	for i := range 15 {
		id := fmt.Sprintf("a-q%02d", i)
		other = append(other, id)
		put(mem(id, "project:a", fmt.Sprintf("Other note %d", i), "quokkaterm somewhere else entirely"))
	}
	same("15 quokkaterm memories in project:a")
	for i := range 40 {
		id := fmt.Sprintf("a-w%02d", i)
		other = append(other, id)
		sc := "project:a"
		if i%2 == 1 {
			sc = "org:a" // outside the team kind's scopes too
		}
		put(mem(id, sc, fmt.Sprintf("Other memo %d", i), "wombatterm and many other words of another tenant"))
	}
	same("40 wombatterm memories in project:a and org:a")
	mu.Lock()
	for _, id := range other {
		delete(docs, id)
	}
	gone = other
	mu.Unlock()
	ix.mu.Lock()
	ix.gen++
	for _, id := range other {
		ix.cols[0].dirty[id] = ix.gen
	}
	ix.mu.Unlock()
	same("the other tenant's memories deleted")
	if n, _ := ix.Store().Len(ctx); n != 4 {
		t.Fatalf("%d documents after the deletes, want 4", n)
	}
}

// Store level, for every MemStore variant: a scoped query's BM25 scores
// are those of a store holding only the admitted scopes' documents, and
// do not move when other scopes gain documents, when a document moves
// into another scope (an upsert), or when documents are deleted.
func TestMemStoreBM25StatisticsPerScope(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range map[string]func() *MemStore{"quantised": NewMemStore, "float32": NewMemStoreFloat32, "serial": NewMemStoreSerial} {
		t.Run(name, func(t *testing.T) {
			d := func(id, scope, text string, axis int) Doc {
				return Doc{ID: id, Scope: scope, Content: text, Outcome: "success", Confidence: 0.8, Vector: vec(axis % 4)}
			}
			mine := []Doc{
				d("b1", "project:b", "quokkaterm handle luggage carefully", 0),
				d("b2", "project:b", "wombatterm weigh luggage before check-in", 1),
				d("b3", "team:b", "quokkaterm wombatterm luggage luggage luggage", 2),
			}
			f := Filter{Readable: func(sc string) bool { return sc == "project:b" || sc == "team:b" }}
			const text = "quokkaterm wombatterm luggage"
			only := newStore()
			if err := only.Upsert(ctx, mine); err != nil {
				t.Fatal(err)
			}
			want, err := only.Candidates(ctx, vec(3), text, f, 10)
			if err != nil {
				t.Fatal(err)
			}
			s := newStore()
			var others []Doc
			for i := range 60 {
				others = append(others, d(fmt.Sprintf("a%02d", i), []string{"project:a", "org:a"}[i%2],
					[]string{"quokkaterm", "wombatterm", "luggage and quite a lot of other words here"}[i%3], i))
			}
			check := func(step string) {
				t.Helper()
				got, err := s.Candidates(ctx, vec(3), text, f, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d candidates, want %d", step, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || got[i].HasBM25 != want[i].HasBM25 || math.Abs(got[i].BM25-want[i].BM25) > 1e-12 {
						t.Errorf("%s: candidate %d %s BM25 %v, want %s %v", step, i, got[i].ID, got[i].BM25, want[i].ID, want[i].BM25)
					}
				}
			}
			if err := s.Upsert(ctx, append(slices.Clone(others[:30]), mine...)); err != nil {
				t.Fatal(err)
			}
			check("with 30 documents of other scopes")
			if err := s.Upsert(ctx, others[30:]); err != nil {
				t.Fatal(err)
			}
			check("with 60")
			// a document of b moves to project:a and back; one of a
			// comes into project:b and leaves again (upserts)
			moved := mine[0]
			moved.Scope = "project:a"
			if err := s.Upsert(ctx, []Doc{moved}); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Candidates(ctx, vec(3), "quokkaterm", f, 10); slices.ContainsFunc(got, func(c Candidate) bool { return c.ID == "b1" }) {
				t.Fatal("b1 moved to project:a and is still a candidate")
			}
			in := others[0]
			in.Scope = "project:b"
			if err := s.Upsert(ctx, []Doc{mine[0], in}); err != nil {
				t.Fatal(err)
			}
			in.Scope = "project:a"
			if err := s.Upsert(ctx, []Doc{in}); err != nil {
				t.Fatal(err)
			}
			check("after documents moved between scopes")
			var ids []string
			for _, o := range others[:45] {
				ids = append(ids, o.ID)
			}
			if err := s.Delete(ctx, ids); err != nil {
				t.Fatal(err)
			}
			check("after 45 deletes")
			if err := s.Delete(ctx, []string{"b2"}); err != nil {
				t.Fatal(err)
			}
			if err := only.Delete(ctx, []string{"b2"}); err != nil {
				t.Fatal(err)
			}
			if want, err = only.Candidates(ctx, vec(3), text, f, 10); err != nil {
				t.Fatal(err)
			}
			check("after a delete in project:b")
		})
	}
}
