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
// upserts (new and in-place), deletes and filters.
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
		return search.Doc{ID: fmt.Sprintf("d%03d", i), Scope: []string{"project:a", "team:t", "org:o"}[i%3], Title: text(3), Content: text(10),
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
	for round := 0; round < 20; round++ {
		var up []search.Doc
		for j := 0; j < 10; j++ {
			up = append(up, doc(r.IntN(400)))
		}
		del := []string{fmt.Sprintf("d%03d", r.IntN(400)), fmt.Sprintf("d%03d", r.IntN(400))}
		both(func(s search.VectorStore) error { return s.Upsert(ctx, up) })
		both(func(s search.VectorStore) error { return s.Delete(ctx, del) })
		q, qt := vec(), text(3)
		f := search.Filter{MinConfidence: r.Float64() / 2, ExcludeSourceSession: "s3"}
		if round%2 == 0 {
			f.Outcome, f.ScopeKind = "success", "project"
		}
		k := 1 + r.IntN(40)
		a, err := cur.Candidates(ctx, q, qt, f, k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := old.Candidates(ctx, q, qt, f, k)
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
