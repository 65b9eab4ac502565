package weaviate

import (
	"fmt"
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

func TestZZUpdatedDocKeepsBM25(t *testing.T) {
	srv := sharedServer(t)
	for _, useGRPC := range []bool{false, true} {
		cfg := testConfig(srv)
		if useGRPC {
			cfg.GRPCHost = srv.GRPCHost
		}
		s := newTestStore(t, srv, cfg)
		docs := []search.Doc{
			scopeLeakDoc("d1", "project:a", "Failed baggage claim", "Refund denied because the bag was late"),
			scopeLeakDoc("d2", "project:a", "Refund trick", "refund refund requested quickly"),
			scopeLeakDoc("d3", "project:a", "Seat change", "changed the seat"),
		}
		if err := s.Upsert(ctxT(t), docs); err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 6; round++ {
			cs, err := s.Candidates(ctxT(t), searchtest.OneHot(1), "refund", search.Filter{Readable: func(sc string) bool { return sc == "project:a" }}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var bm []string
			for _, c := range cs {
				if c.BM25 > 0 {
					bm = append(bm, fmt.Sprintf("%s=%.3f", c.ID, c.BM25))
				}
			}
			t.Logf("grpc=%v round %d: bm25 hits %v", useGRPC, round, bm)
			// a usage update: the same doc re-upserted with another usage count
			d := docs[0]
			d.UsageCount = round + 1
			docs[0] = d
			if err := s.Upsert(ctxT(t), []search.Doc{d}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
