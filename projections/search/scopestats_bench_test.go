package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkScopedCandidates is MemStore.Candidates over 10k documents of
// 50 scopes (random 512-d vectors, 12-word texts of a 22-word
// vocabulary), k 200, for a searcher reading every scope and for one
// reading a single scope: the cost of the per-scope BM25 statistics
// (TestScopedSearchIgnoresOtherScopes) against the whole-collection ones
// they replaced.
func BenchmarkScopedCandidates(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("cancel reservation flight baggage refund upgrade cabin passenger certificate payment confirm user details search direct onestop insurance economy business delay compensation policy")
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	vec := func() []float32 {
		v := make([]float32, 512)
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
	s := NewMemStore()
	docs := make([]Doc, 10_000)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%05d", i), Scope: fmt.Sprintf("project:p%02d", i%50), Title: text(4), Content: text(8),
			Outcome: "success", Confidence: 0.8, Vector: vec()}
	}
	ctx := context.Background()
	if err := s.Upsert(ctx, docs); err != nil {
		b.Fatal(err)
	}
	queries := make([][]float32, 64)
	texts := make([]string, 64)
	for i := range queries {
		queries[i], texts[i] = vec(), text(5)
	}
	for _, c := range []struct {
		name string
		f    Filter
	}{{"every scope", Filter{}}, {"one scope", Filter{Readable: func(sc string) bool { return sc == "project:p07" }}}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := s.Candidates(ctx, queries[i%64], texts[i%64], c.f, CandidatesPerQuery); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
