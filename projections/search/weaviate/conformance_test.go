package weaviate

import (
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

// TestConformance runs the shared suite against every collection of a
// real Weaviate server.
func TestConformance(t *testing.T) {
	srv := sharedServer(t)
	searchtest.RunMulti(t, func(t *testing.T) search.MultiStore { return newTestStore(t, srv, testConfig(srv)) })
}

// TestConformanceGRPC runs the suite with batch upserts over gRPC.
func TestConformanceGRPC(t *testing.T) {
	srv := sharedServer(t)
	searchtest.Run(t, func(t *testing.T) search.VectorStore {
		cfg := testConfig(srv)
		cfg.GRPCHost = srv.GRPCHost
		return newTestStore(t, srv, cfg)
	})
}

// TestConformanceTwoPhase runs the suite on the two-phase path Index
// takes (CandidateRefs, then Docs: searchtest.TwoPhase) over gRPC, where
// CandidateRefs asks for object UUIDs alone. Over GraphQL the two-phase
// path is checked against the old query path by TestSameCandidatesAsBefore
// and through Index by TestIndexTwoPhaseSameResults.
func TestConformanceTwoPhase(t *testing.T) {
	srv := sharedServer(t)
	searchtest.Run(t, func(t *testing.T) search.VectorStore {
		cfg := testConfig(srv)
		cfg.GRPCHost = srv.GRPCHost
		return searchtest.TwoPhase(newTestStore(t, srv, cfg))
	})
}
