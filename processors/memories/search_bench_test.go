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
	"github.com/chronicle-dev/chronicle/projections/search"
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

func bankOf(b *testing.B, n int) *projections.Store {
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

// BenchmarkMemorySearch: memory_search latency (Index.Search: query
// embedding, candidates by vector and BM25, ranking) at 10,000 and 100,000
// memories on the embedded store, next to candidate retrieval alone.
func BenchmarkMemorySearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			st := bankOf(b, n)
			defer st.Close()
			ix := search.NewIndex(st, hashEmbedder{}, nil, memories.SearchSource())
			ctx := context.Background()
			if err := ix.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			zero := 0.0
			var full, cand []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := text(r, 5)
				t0 := time.Now()
				res, err := ix.Search(ctx, search.Query{Text: q, Limit: 5, MinConfidence: &zero})
				if err != nil || len(res.Memories) == 0 {
					b.Fatalf("%v %+v", err, res)
				}
				full = append(full, time.Since(t0))
				v, _ := hashEmbedder{}.Embed(ctx, []string{q})
				t0 = time.Now()
				if _, err := ix.Store().Candidates(ctx, v[0], q, search.Filter{}, search.CandidatesPerQuery); err != nil {
					b.Fatal(err)
				}
				cand = append(cand, time.Since(t0))
			}
			p50, p99 := quantiles(full)
			c50, c99 := quantiles(cand)
			b.ReportMetric(float64(p50.Microseconds())/1000, "search_p50_ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "search_p99_ms")
			b.ReportMetric(float64(c50.Microseconds())/1000, "candidates_p50_ms")
			b.ReportMetric(float64(c99.Microseconds())/1000, "candidates_p99_ms")
		})
	}
}
