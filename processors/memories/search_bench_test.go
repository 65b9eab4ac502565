package memories_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

// hashEmbedder gives every text a deterministic pseudo-random unit vector:
// the benchmark measures search, not the model (embedding throughput is
// BenchmarkUSELite in projections/embedder).
type hashEmbedder struct{}

func (hashEmbedder) Model() string { return "hash-512" }
func (hashEmbedder) Dim() int      { return 512 }
func (hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := sha256.Sum256([]byte(t))
		r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
		v := make([]float32, 512)
		var n float64
		for j := range v {
			v[j] = float32(r.NormFloat64())
			n += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

var words = []string{"cancel", "reservation", "flight", "baggage", "refund", "upgrade", "cabin", "passenger", "certificate", "payment",
	"confirm", "user", "details", "search", "direct", "onestop", "insurance", "economy", "business", "delay", "compensation", "policy"}

func text(r *rand.Rand, n int) string {
	s := ""
	for i := 0; i < n; i++ {
		s += words[r.IntN(len(words))] + " "
	}
	return s
}

func bankOf(b testing.TB, n int) *projections.Store {
	b.Helper()
	st, err := projections.Open(b.TempDir(), projections.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	scopes := []string{"project:a", "team:t", "org:o"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		env, _ := events.New(events.MemoryRecorded, "bench", fmt.Sprintf("r%d", i), at, events.MemoryRecordedData{
			MemoryID: fmt.Sprintf("m%06d", i), Title: text(r, 4), Description: text(r, 12), Content: text(r, 30),
			Outcome: []string{"success", "failure"}[i%2], Source: "explicit"})
		env.Scope = scopes[i%3]
		if _, err := st.Apply(memories.Name, projections.Position{Topic: "m", Offset: int64(i)}, &env, memories.Processor{}.Apply); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

// queryEmbedder embeds documents like hashEmbedder (the bank is 10,000
// or 100,000 random unit vectors: USE lite would take minutes to embed it,
// and a document's values do not change the cost of a scan) and, once
// queries is set, embeds every text — the search's query — with USE lite,
// the offline model a deployment uses, so that the measured latency
// includes a real query embedding.
type queryEmbedder struct {
	use     embedder.Embedder
	queries bool
}

func (e *queryEmbedder) Model() string { return "hash-512" }
func (e *queryEmbedder) Dim() int      { return 512 }
func (e *queryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.queries {
		return e.use.Embed(ctx, texts)
	}
	return hashEmbedder{}.Embed(ctx, texts)
}

// BenchmarkMemorySearch: memory_search latency (Index.Search: USE lite
// query embedding, candidates by vector and BM25, ranking) at 10,000 and
// 100,000 memories on the embedded store, side by side with the store
// before issue 11 (searchtest.LegacyMemStore: the baseline) under the same
// Index and ranking; with the query embedding alone and candidate retrieval
// alone (the store's share) for each.
func BenchmarkMemorySearch(b *testing.B) {
	use, err := embedder.NewUSELite()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10_000, 100_000} {
		st := bankOf(b, n)
		for _, store := range []struct {
			name string
			vs   func() search.VectorStore
		}{{"legacy", func() search.VectorStore { return searchtest.NewLegacyMemStore() }}, {"current", func() search.VectorStore { return search.NewMemStore() }}} {
			b.Run(fmt.Sprintf("%d/%s", n, store.name), func(b *testing.B) {
				emb := &queryEmbedder{use: use}
				vs := store.vs()
				ix := search.NewIndex(st, emb, vs, memories.SearchSource())
				ctx := context.Background()
				if err := ix.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				emb.queries = true
				r := rand.New(rand.NewPCG(1, 2))
				zero := 0.0
				var full, embed, cand []time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q := text(r, 5)
					t0 := time.Now()
					res, err := ix.Search(ctx, search.Query{Text: q, Limit: 5, MinConfidence: &zero})
					if err != nil || len(res.Memories) == 0 {
						b.Fatalf("%v %+v", err, res)
					}
					full = append(full, time.Since(t0))
					t0 = time.Now()
					v, err := use.Embed(ctx, []string{q})
					if err != nil {
						b.Fatal(err)
					}
					embed = append(embed, time.Since(t0))
					t0 = time.Now()
					if _, err := vs.Candidates(ctx, v[0], q, search.Filter{}, search.CandidatesPerQuery); err != nil {
						b.Fatal(err)
					}
					cand = append(cand, time.Since(t0))
				}
				b.StopTimer()
				for _, m := range []struct {
					name string
					d    []time.Duration
				}{{"search", full}, {"embed", embed}, {"candidates", cand}} {
					p50, p99 := quantiles(m.d)
					b.ReportMetric(float64(p50.Microseconds())/1000, m.name+"_p50_ms")
					b.ReportMetric(float64(p99.Microseconds())/1000, m.name+"_p99_ms")
				}
			})
		}
		st.Close()
	}
}
