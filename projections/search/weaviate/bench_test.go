package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// benchSeed fixes the benchmark's documents and queries.
const benchSeed = 20260601

// benchVocab is a deterministic vocabulary of 2,000 pseudo-words.
var benchVocab = func() []string {
	r := rand.New(rand.NewPCG(benchSeed, 1))
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var out []string
	for len(out) < 2000 {
		var b strings.Builder
		for i := 0; i < 2+r.IntN(2); i++ {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

func benchWords(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		// Zipf-like: low indices are common words.
		ws[i] = benchVocab[int(float64(len(benchVocab))*math.Pow(r.Float64(), 2))]
	}
	return strings.Join(ws, " ")
}

func benchVector(r *rand.Rand) []float32 {
	v := make([]float32, 512)
	var n float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

// benchDocs are n random documents: unit vectors, short texts, scopes,
// outcomes and confidences spread so a default filter admits about half.
func benchDocs(n int) []search.Doc {
	r := rand.New(rand.NewPCG(benchSeed, uint64(n)))
	scopes := []string{"project:p1", "project:p2", "team:t1", "org:default"}
	docs := make([]search.Doc, n)
	for i := range docs {
		docs[i] = search.Doc{ID: fmt.Sprintf("bench-%06d", i), Scope: scopes[r.IntN(len(scopes))],
			Title: benchWords(r, 3), Description: benchWords(r, 8), Content: benchWords(r, 20),
			Outcome: []string{"success", "failure"}[r.IntN(2)], Tags: []string{benchVocab[r.IntN(50)]},
			SourceSessions: []string{fmt.Sprintf("sess-%d", r.IntN(500))}, Confidence: math.Round(r.Float64()*100) / 100,
			Evidence: r.IntN(10), UsageCount: r.IntN(20), Vector: benchVector(r), Model: "bench-random-512"}
	}
	return docs
}

type benchQuery struct {
	v    []float32
	text string
}

func benchQueries() []benchQuery {
	r := rand.New(rand.NewPCG(benchSeed, 2))
	qs := make([]benchQuery, 256)
	for i := range qs {
		qs[i] = benchQuery{benchVector(r), benchWords(r, 3)}
	}
	return qs
}

// benchFilter is Index's default: confidence ≥ 0.5, every scope and
// outcome, and a Readable as a service would pass (it made the Weaviate
// store over-fetch before issue 11; now it is pushed down).
var benchFilter = search.Filter{MinConfidence: 0.5, Readable: func(scope string) bool { return scope != "project:p2" }}

// benchOneScope is the filter Index makes of a query for one scope
// (scope=project:p1): its kind, and a Readable admitting only that scope
// among the caller's readable ones.
var benchOneScope = search.Filter{MinConfidence: 0.5, ScopeKind: search.ScopeProject,
	Readable: func(scope string) bool { return scope == "project:p1" }}

// legacyStore answers Candidates with the query path before issue 11
// (legacy_test.go), for the side-by-side benchmark.
type legacyStore struct{ *Store }

func (l legacyStore) Candidates(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	return l.legacyCandidates(ctx, v, text, f, k)
}

// twoPhaseStore answers Candidates as Index reads a search.DocStore for a
// search of search.DefaultLimit hits without near-duplicates:
// CandidateRefs, then one Docs call for 2 × DefaultLimit of them (which
// ones does not change the cost: the first in the merged order).
type twoPhaseStore struct{ *Store }

func (t twoPhaseStore) Candidates(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	cs, err := t.CandidateRefs(ctx, v, text, f, k)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, 2*search.DefaultLimit)
	for _, c := range cs[:min(len(cs), 2*search.DefaultLimit)] {
		ids = append(ids, c.ID)
	}
	docs, err := t.Docs(ctx, ids, f)
	if err != nil {
		return nil, err
	}
	if len(docs) != len(ids) {
		return nil, fmt.Errorf("Docs found %d of %d candidates", len(docs), len(ids))
	}
	return cs, nil
}

// loaded caches stores loaded for the benchmarks: key "MemStore/10000".
var loaded struct {
	mu     sync.Mutex
	stores map[string]search.VectorStore
	load   map[string]time.Duration
}

// loadStore returns the store name with n benchDocs, loading it on first
// use (the load time is reported as load-s) and then waiting settle.
func loadStore(b *testing.B, name string, n int, settle time.Duration, open func() search.VectorStore) (search.VectorStore, time.Duration) {
	loaded.mu.Lock()
	defer loaded.mu.Unlock()
	key := fmt.Sprintf("%s/%d", name, n)
	if s, ok := loaded.stores[key]; ok {
		return s, loaded.load[key]
	}
	if loaded.stores == nil {
		loaded.stores, loaded.load = map[string]search.VectorStore{}, map[string]time.Duration{}
	}
	s := open()
	docs := benchDocs(n)
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < len(docs); i += 1000 {
		if err := s.Upsert(ctx, docs[i:min(i+1000, len(docs))]); err != nil {
			b.Fatalf("load %s: %v", key, err)
		}
	}
	took := time.Since(start)
	if got, err := s.Len(ctx); err != nil || got != n {
		b.Fatalf("load %s: Len = %d, %v", key, got, err)
	}
	if settle > 0 {
		time.Sleep(settle)
	}
	loaded.stores[key], loaded.load[key] = s, took
	return s, took
}

// runCandidates measures Candidates with k = search.CandidatesPerQuery
// (what Index asks for) and reports p50/p99 latency in milliseconds.
func runCandidates(b *testing.B, s search.VectorStore, f search.Filter, load time.Duration) {
	qs := benchQueries()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%len(qs)]
		start := time.Now()
		cs, err := s.Candidates(ctx, q.v, q.text, f, search.CandidatesPerQuery)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if len(cs) == 0 {
			b.Fatal("no candidates")
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(math.Ceil(p*float64(len(lat))))-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(load.Seconds(), "load-s")
}

// weaviateSettle is how long the benchmark waits after loading Weaviate:
// the test server flushes its memtables 5 s after the last write
// (weaviatetest), and queries then run on flushed segments, as in a
// server's steady state. Right after a bulk load, BM25 over the unflushed
// memtable takes ~110 ms instead of ~20 ms at 10,000 documents.
const weaviateSettle = 10 * time.Second

// BenchmarkCandidates compares the MemStore and the Weaviate store on the
// same 10,000 documents (random unit vectors, fixed seed, short random
// texts), then the MemStore alone at 100,000, and Weaviate at 100,000 only
// with CHRONICLE_BENCH_WEAVIATE_100K=1 (loading takes minutes on 2 cores).
// On Weaviate it runs, on one server and one loaded collection, the query
// path before issue 11 (before: three GraphQL queries over-fetching 4 × k
// objects), Candidates over GraphQL (graphql) and over gRPC (grpc:
// Config.GRPCHost set), and the two-phase path Index takes since
// (graphql-2phase, grpc-2phase: CandidateRefs, then Docs of 2 ×
// search.DefaultLimit candidates, see twoPhaseStore), in turn, each with
// the default filter (readable: every scope but one) and a one-scope
// filter; -count runs each sub-benchmark again on the same loaded
// collection (so its runs are consecutive: for runs interleaved across
// paths, run the test binary three times with -count 1, as the README's
// figures were). The grpc-2phase path's refCache is warm (the store
// wrote the collection), as in a serving process after its first sync.
// Run: go test -run '^$' -bench 'Candidates/Weaviate/10000/(graphql|grpc)' -benchtime 300x -count 3 ./projections/search/weaviate/
func BenchmarkCandidates(b *testing.B) {
	var drop []*Store
	b.Cleanup(func() {
		for _, s := range drop {
			_ = s.Drop(context.Background())
			s.Close()
		}
	})
	sizes := []int{10000, 100000}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("MemStore/%d", n), func(b *testing.B) {
			s, load := loadStore(b, "MemStore", n, 0, func() search.VectorStore { return search.NewMemStore() })
			runCandidates(b, s, benchFilter, load)
		})
		if n > 10000 && os.Getenv("CHRONICLE_BENCH_WEAVIATE_100K") != "1" {
			continue
		}
		b.Run(fmt.Sprintf("Weaviate/%d", n), func(b *testing.B) {
			srv := sharedServer(b)
			cfg := testConfig(srv)
			cfg.ClassPrefix = fmt.Sprintf("Bench%d_", n)
			cfg.BatchSize = 500
			cfg.Timeout = time.Minute
			grpcCfg := cfg
			grpcCfg.GRPCHost = srv.GRPCHost
			s, load := loadStore(b, "Weaviate", n, weaviateSettle, func() search.VectorStore {
				st, err := New(context.Background(), grpcCfg)
				if err != nil {
					b.Fatal(err)
				}
				_ = st.Drop(context.Background()) // leftovers of an interrupted run
				if st, err = New(context.Background(), grpcCfg); err != nil {
					b.Fatal(err)
				}
				drop = append(drop, st)
				return st
			})
			// The same collections, searched over GraphQL (no GRPCHost).
			gql, err := New(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer gql.Close()
			for _, fc := range []struct {
				name string
				f    search.Filter
			}{{"readable", benchFilter}, {"one-scope", benchOneScope}} {
				b.Run("before/"+fc.name, func(b *testing.B) { runCandidates(b, legacyStore{gql}, fc.f, load) })
				b.Run("graphql/"+fc.name, func(b *testing.B) { runCandidates(b, gql, fc.f, load) })
				b.Run("grpc/"+fc.name, func(b *testing.B) { runCandidates(b, s, fc.f, load) })
				b.Run("graphql-2phase/"+fc.name, func(b *testing.B) { runCandidates(b, twoPhaseStore{gql}, fc.f, load) })
				b.Run("grpc-2phase/"+fc.name, func(b *testing.B) { runCandidates(b, twoPhaseStore{s.(*Store)}, fc.f, load) })
			}
		})
	}
}

// BenchmarkDecodeDoc compares decoding the doc property of 200 bench
// documents (one candidate list) with encoding/json and goccy/go-json.
func BenchmarkDecodeDoc(b *testing.B) {
	var raw [][]byte
	for _, d := range benchDocs(200) {
		o := object("M", "memory_id", d)
		raw = append(raw, []byte(o.Properties.(map[string]any)[docProp].(string)))
	}
	for _, c := range []struct {
		name string
		dec  func([]byte, any) error
	}{{"encoding-json", json.Unmarshal}, {"go-json", func(b []byte, v any) error { return gojson.Unmarshal(b, v) }}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for _, r := range raw {
					var d search.Doc
					if err := c.dec(r, &d); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
