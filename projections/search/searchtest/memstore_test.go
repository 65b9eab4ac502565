package searchtest_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

// TestMemStore runs the conformance suite against the embedded store.
func TestMemStore(t *testing.T) {
	searchtest.Run(t, func(*testing.T) search.VectorStore { return search.NewMemStore() })
}

// TestMemStores runs the suite against every collection of the embedded
// MultiStore.
func TestMemStores(t *testing.T) {
	searchtest.RunMulti(t, func(*testing.T) search.MultiStore { return search.NewMemStores() })
}
