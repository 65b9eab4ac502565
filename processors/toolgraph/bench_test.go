package toolgraph

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"gonum.org/v1/gonum/graph/network"
)

// Benchmarks (go test -run '^$' -bench . ./processors/toolgraph/):
//
//	BenchmarkPageRank10k    weighted PageRank, 10,000 tools, 100,000 edges:
//	                        this package's iteration and gonum's PageRankSparse
//	BenchmarkRecompute10k   what a recompute costs at that size: PageRank,
//	                        Louvain and the orders Next uses
//	BenchmarkNext           one next-step query on an analysed graph (the
//	                        tau-bench graph and the 10k graph), p50/p99 per
//	                        query, next to the bigram baseline's lookup
//	BenchmarkNextFromStore  Next(store, …): load the tau-bench projection
//	                        from Pebble, analyse, predict
//	BenchmarkApplySessions  learning the tau-bench graph through the
//	                        processors, per session

// BenchmarkPageRank10k measures weighted PageRank on a random graph of
// 10,000 tools and 100,000 edges (fixed seed).
func BenchmarkPageRank10k(b *testing.B) {
	g := randomGraph(10_000, 100_000, 1)
	a := structure(g, defaultParams)
	b.Run("toolgraph", func(b *testing.B) {
		for b.Loop() {
			_ = a.pageRank()
		}
	})
	b.Run("gonum-PageRankSparse", func(b *testing.B) {
		view := gview{a: a}
		for b.Loop() {
			_ = network.PageRankSparse(view, Damping, PageRankTolerance)
		}
	})
}

// BenchmarkRecompute10k measures a full analysis (PageRank, Louvain,
// orders) of the 10,000-tool graph: the work of one recompute.
func BenchmarkRecompute10k(b *testing.B) {
	g := randomGraph(10_000, 100_000, 1)
	for b.Loop() {
		_ = analyze(g, defaultParams)
	}
}

// latencies runs query n times and reports p50 and p99 in µs.
func latencies(b *testing.B, query func(i int)) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		start := time.Now()
		query(i)
		d = append(d, time.Since(start))
		i++
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) / 1e3 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkNext measures one next-step query (top 3) on an analysed graph,
// with the bigram baseline's lookup on the same contexts side by side.
func BenchmarkNext(b *testing.B) {
	ss := sampleSessions(b)
	g := sampleGraph(b)
	g.analysis()
	var contexts [][]string
	base := newBaselines()
	for _, s := range ss {
		tools := s.tools()
		base.learn(tools)
		for i := range tools {
			contexts = append(contexts, tools[:i])
		}
	}
	base.freeze()
	b.Run("tau-bench/graph", func(b *testing.B) {
		latencies(b, func(i int) { _ = g.Next(contexts[i%len(contexts)], 3) })
	})
	b.Run("tau-bench/bigram", func(b *testing.B) {
		latencies(b, func(i int) {
			c := contexts[i%len(contexts)]
			prev := ""
			if len(c) > 0 {
				prev = c[len(c)-1]
			}
			_ = base.bigram(prev, 3)
		})
	})

	big := randomGraph(10_000, 100_000, 1)
	a := big.analysis()
	rng := rand.New(rand.NewPCG(3, 4))
	bigCtx := make([][]string, 4096)
	bigBase := newBaselines()
	for _, e := range big.edges {
		for range e.Count {
			bigBase.learn([]string{e.From, e.To})
		}
	}
	bigBase.freeze()
	for i := range bigCtx {
		bigCtx[i] = []string{a.tools[rng.IntN(len(a.tools))]}
	}
	b.Run("10k/graph", func(b *testing.B) {
		latencies(b, func(i int) { _ = big.Next(bigCtx[i%len(bigCtx)], 3) })
	})
	b.Run("10k/bigram", func(b *testing.B) {
		latencies(b, func(i int) { _ = bigBase.bigram(bigCtx[i%len(bigCtx)][0], 3) })
	})
}

// BenchmarkNextFromStore measures Next(store, …) on the projection of all
// 200 tau-bench sessions: reading the rows, analysing, predicting.
func BenchmarkNextFromStore(b *testing.B) {
	evs := sampleEvents(b, 200)
	s, err := projections.Open(b.TempDir(), projections.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec := &recorder{}
	p := Processor{RecomputeEvery: -1, Emit: rec.emit}
	off := int64(0)
	for _, session := range evs {
		for i := range session {
			if _, err := ApplyLocally(s, p, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &session[i]); err != nil {
				b.Fatal(err)
			}
			off++
		}
	}
	latencies(b, func(int) {
		if _, err := Next(s, []string{"get_user_details", "get_reservation_details"}, 3); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkApplySessions measures learning the graph of all 200 tau-bench
// sessions through the processors (Transitions, then Processor with the
// default recompute every 50 transitions), one op per session applied:
// what the toolgraph costs the engine per session.
func BenchmarkApplySessions(b *testing.B) {
	evs := sampleEvents(b, 200)
	var s *projections.Store
	off, i := int64(0), 0
	for b.Loop() {
		if i%len(evs) == 0 { // a fresh store for each pass over the sessions
			if s != nil {
				s.Close()
			}
			var err error
			if s, err = projections.Open(b.TempDir(), projections.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		session := evs[i%len(evs)]
		for j := range session {
			if _, err := ApplyLocally(s, Processor{}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &session[j]); err != nil {
				b.Fatal(err)
			}
			off++
		}
		i++
	}
	if s != nil {
		s.Close()
	}
}
