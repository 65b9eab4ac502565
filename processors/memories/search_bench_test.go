package memories_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
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

// EmbedQuery is the query path of USE lite (embedder.QueryEmbedder), as
// the Index takes it for a search.
func (e *queryEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if e.queries {
		return embedder.EmbedQuery(ctx, e.use, text)
	}
	v, err := hashEmbedder{}.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// BenchmarkMemorySearch: memory_search latency (Index.Search: USE lite
// query embedding, candidates by vector and BM25, ranking) at 10,000 and
// 100,000 memories on the embedded store, today's code ("now": the query
// embedding's matrix products and the int8 scan split across idle cores
// while that pays, the bound-first filter tests) side by side with the
// code before that ("before": embedder.USELite with Serial and
// search.NewMemStoreSerial, which give the same vectors and candidates,
// bit for bit) under the same index and ranking, on the same distinct
// queries, alternating which goes first on each query so that both see
// the same load; with the query embedding alone and candidate retrieval
// alone (the store's share) for each. Both search through the Index's
// query cache, which misses on these distinct queries; now_repeat is the
// same search again right after (a hit: an agent repeating its query).
// USE lite has Workers 1, as the pipeline builds it, and the queries go
// through its query path (embedder.EmbedQuery), as the Index's do.
// Metrics are p50 and p99 in ms. 100k is skipped with
// CHRONICLE_BENCH_SEARCH_10K_ONLY=1. Older baselines are left out: the
// float32 scan and the k-blocked embedding of before issue 11 item 2
// (search.NewMemStoreFloat32, USELite.BlockedDense) and the legacy store
// of before issue 11 (searchtest.LegacyMemStore, 10–20× slower).
func BenchmarkMemorySearch(b *testing.B) {
	use, err := embedder.NewUSELite()
	if err != nil {
		b.Fatal(err)
	}
	use.Workers = 1 // as the pipeline builds it: batch work on one core, queries on EmbedQuery's path
	serial := *use
	serial.Serial = true
	sizes := []int{10_000, 100_000}
	if os.Getenv("CHRONICLE_BENCH_SEARCH_10K_ONLY") != "" {
		sizes = sizes[:1]
	}
	type side struct {
		name string
		use  embedder.Embedder
		vs   search.VectorStore
		ix   *search.Index
		emb  *queryEmbedder
		// latencies: full search, query embedding, candidates, repeated search
		full, embed, cand, repeat []time.Duration
	}
	for _, n := range sizes {
		st := bankOf(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			sides := []*side{
				{name: "before", use: &serial, vs: search.NewMemStoreSerial()},
				{name: "now", use: use, vs: search.NewMemStore()},
			}
			for _, sd := range sides {
				sd.emb = &queryEmbedder{use: sd.use}
				sd.ix = search.NewIndex(st, sd.emb, sd.vs, memories.SearchSource())
				if err := sd.ix.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				sd.emb.queries = true
			}
			r := rand.New(rand.NewPCG(1, 2))
			zero := 0.0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := text(r, 5)
				for k := range sides {
					sd := sides[(i+k)%2]
					t0 := time.Now()
					res, err := sd.ix.Search(ctx, search.Query{Text: q, Limit: 5, MinConfidence: &zero})
					if err != nil || len(res.Memories) == 0 {
						b.Fatalf("%v %+v", err, res)
					}
					sd.full = append(sd.full, time.Since(t0))
				}
				now := sides[1]
				t0 := time.Now()
				if _, err := now.ix.Search(ctx, search.Query{Text: q, Limit: 5, MinConfidence: &zero}); err != nil {
					b.Fatal(err)
				}
				now.repeat = append(now.repeat, time.Since(t0))
				for k := range sides {
					sd := sides[(i+k)%2]
					t0 := time.Now()
					v, err := embedder.EmbedQuery(ctx, sd.use, q)
					if err != nil {
						b.Fatal(err)
					}
					sd.embed = append(sd.embed, time.Since(t0))
					t0 = time.Now()
					if _, err := sd.vs.Candidates(ctx, v, q, search.Filter{}, search.CandidatesPerQuery); err != nil {
						b.Fatal(err)
					}
					sd.cand = append(sd.cand, time.Since(t0))
				}
			}
			b.StopTimer()
			for _, sd := range sides {
				for _, m := range []struct {
					name string
					d    []time.Duration
				}{{"search", sd.full}, {"embed", sd.embed}, {"candidates", sd.cand}, {"repeat_search", sd.repeat}} {
					if len(m.d) == 0 {
						continue
					}
					p50, p99 := quantiles(m.d)
					b.ReportMetric(float64(p50.Microseconds())/1000, sd.name+"_"+m.name+"_p50_ms")
					b.ReportMetric(float64(p99.Microseconds())/1000, sd.name+"_"+m.name+"_p99_ms")
				}
			}
		})
		st.Close()
	}
}
