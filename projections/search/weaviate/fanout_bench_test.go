package weaviate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// BenchmarkScopeFanOut measures what BM25 per scope costs a reader of
// many scopes: the 10,000 bench documents spread over 50 project scopes
// (200 each), searched on the two-phase path over gRPC (as Index does)
// by a reader of all 50 scopes (50 bm25 queries per search), of 10 and of
// one, with k = 200.
// Run: go test -run '^$' -bench ScopeFanOut -benchtime 200x ./projections/search/weaviate/
func BenchmarkScopeFanOut(b *testing.B) {
	srv := sharedServer(b)
	cfg := testConfig(srv)
	cfg.ClassPrefix, cfg.BatchSize, cfg.Timeout, cfg.GRPCHost = "Fan10000_", 500, time.Minute, srv.GRPCHost
	vs, load := loadStore(b, "Fan", 10000, weaviateSettle, func() search.VectorStore {
		return fanStore{freshBenchStore(b, cfg)}
	})
	st := vs.(fanStore).Store
	for _, n := range []int{50, 10, 1} {
		f := search.Filter{MinConfidence: 0.5, Readable: func(sc string) bool {
			var i int
			fmt.Sscanf(sc, "project:s%d", &i)
			return i < n
		}}
		b.Run(fmt.Sprintf("readers-of-%d", n), func(b *testing.B) { runCandidates(b, twoPhaseStore{st}, f, load) })
	}
	// a searcher of every scope (an HTTP "*" token, an evaluation): one
	// bm25 query on the collection's class
	every := search.Filter{MinConfidence: 0.5, EveryScope: true, Readable: func(string) bool { return true }}
	b.Run("reader-of-every-scope", func(b *testing.B) { runCandidates(b, twoPhaseStore{st}, every, load) })
}

// fanStore is a Store whose Upsert puts the bench documents in 50 project
// scopes (project:s0 … project:s49, by the number in their id).
type fanStore struct{ *Store }

func (f fanStore) Upsert(ctx context.Context, docs []search.Doc) error {
	for i := range docs {
		var n int
		fmt.Sscanf(docs[i].ID, "bench-%d", &n)
		docs[i].Scope = fmt.Sprintf("project:s%d", n%50)
	}
	return f.Store.Upsert(ctx, docs)
}
