package searchtest_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

// TestMemStore runs the conformance suite against the embedded store.
func TestMemStore(t *testing.T) {
	searchtest.Run(t, func(*testing.T) search.VectorStore { return search.NewMemStore() })
}

// TestMemStoreFloat32 runs the suite against the embedded store without
// the quantised scan (the baseline of the quantised one).
func TestMemStoreFloat32(t *testing.T) {
	searchtest.Run(t, func(*testing.T) search.VectorStore { return search.NewMemStoreFloat32() })
}

// TestMemStoreSerial runs the suite against the quantised store without
// its bound-first selection (the baseline of BenchmarkMemorySearch).
func TestMemStoreSerial(t *testing.T) {
	searchtest.Run(t, func(*testing.T) search.VectorStore { return search.NewMemStoreSerial() })
}

// TestMemStores runs the suite against every collection of the embedded
// MultiStore.
func TestMemStores(t *testing.T) {
	searchtest.RunMulti(t, func(*testing.T) search.MultiStore { return search.NewMemStores() })
}

// TestLegacyMemStore runs the suite against the pre-issue-11 store, the
// baseline of BenchmarkMemorySearch.
func TestLegacyMemStore(t *testing.T) {
	searchtest.Run(t, func(*testing.T) search.VectorStore { return searchtest.NewLegacyMemStore() })
}

// The current store answers what the legacy one answers: the same
// candidates by cosine and by BM25, in order, over random documents after
// upserts (new, in place, and moving a document to another scope),
// deletes and filters. A filter that admits only some scopes (a scope
// kind, Readable) is compared with a legacy store holding only the
// documents of the scopes it admits: the current store's BM25 statistics
// are those scopes' (tenant-isolation review), while the legacy store's
// are the whole collection's.
func TestMemStoreMatchesLegacy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("cancel reservation flight baggage refund upgrade cabin passenger certificate payment confirm user details search")
	text := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[r.IntN(len(words))] + " ")
		}
		return b.String()
	}
	vec := func() []float32 {
		v := make([]float32, 64)
		var n float64
		for i := range v {
			v[i] = float32(r.NormFloat64())
			n += float64(v[i]) * float64(v[i])
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
		return v
	}
	doc := func(i int) search.Doc {
		return search.Doc{ID: fmt.Sprintf("d%03d", i), Scope: []string{"project:a", "team:t", "org:o", "project:b"}[r.IntN(4)], Title: text(3), Content: text(10),
			Outcome: []string{"success", "failure"}[r.IntN(2)], Confidence: r.Float64(), SourceSessions: []string{fmt.Sprintf("s%d", i%7)}, Vector: vec()}
	}
	ctx := context.Background()
	cur, old := search.NewMemStore(), searchtest.NewLegacyMemStore()
	both := func(f func(search.VectorStore) error) {
		for _, s := range []search.VectorStore{cur, old} {
			if err := f(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var docs []search.Doc
	for i := 0; i < 300; i++ {
		docs = append(docs, doc(i))
	}
	both(func(s search.VectorStore) error { return s.Upsert(ctx, docs) })
	held := map[string]search.Doc{} // what the stores hold
	for _, d := range docs {
		held[d.ID] = d
	}
	for round := 0; round < 20; round++ {
		var up []search.Doc
		for j := 0; j < 10; j++ {
			up = append(up, doc(r.IntN(400)))
		}
		del := []string{fmt.Sprintf("d%03d", r.IntN(400)), fmt.Sprintf("d%03d", r.IntN(400))}
		both(func(s search.VectorStore) error { return s.Upsert(ctx, up) })
		both(func(s search.VectorStore) error { return s.Delete(ctx, del) })
		for _, d := range up {
			held[d.ID] = d
		}
		for _, id := range del {
			delete(held, id)
		}
		q, qt := vec(), text(3)
		f := search.Filter{MinConfidence: r.Float64() / 2, ExcludeSourceSession: "s3"}
		switch round % 4 {
		case 0:
			f.Outcome, f.ScopeKind = "success", "project"
		case 2:
			f.Readable = func(sc string) bool { return sc == "project:b" || sc == "team:t" }
		}
		k := 1 + r.IntN(40)
		a, err := cur.Candidates(ctx, q, qt, f, k)
		if err != nil {
			t.Fatal(err)
		}
		ref := search.VectorStore(old)
		if round%2 == 0 { // the scopes f admits only
			ref = searchtest.NewLegacyMemStore()
			var in []search.Doc
			for _, d := range held {
				if f.AdmitsScope(d.Scope) {
					in = append(in, d)
				}
			}
			if err := ref.Upsert(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		b, err := ref.Candidates(ctx, q, qt, f, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("round %d: %d candidates, legacy %d", round, len(a), len(b))
		}
		for i := range a {
			if a[i].ID != b[i].ID || a[i].HasCosine != b[i].HasCosine || a[i].HasBM25 != b[i].HasBM25 ||
				math.Abs(a[i].Cosine-b[i].Cosine) > 1e-5 || math.Abs(a[i].BM25-b[i].BM25) > 1e-9 || a[i].Confidence != b[i].Confidence {
				t.Fatalf("round %d: candidate %d = %s %v/%v %v/%v, legacy %s %v/%v %v/%v", round, i,
					a[i].ID, a[i].HasCosine, a[i].Cosine, a[i].HasBM25, a[i].BM25, b[i].ID, b[i].HasCosine, b[i].Cosine, b[i].HasBM25, b[i].BM25)
			}
		}
	}
}
