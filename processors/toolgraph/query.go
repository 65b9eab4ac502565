package toolgraph

import (
	"errors"
	"fmt"

	"github.com/chronicle-dev/chronicle/projections"
)

// Read-only queries over the projection. Each call reads the rows it needs
// from the store and builds the Graph; a server answering many queries can
// call Load once and reuse the Graph while Version is unchanged (the graph
// algorithms themselves are pure functions of the Graph).

// ErrBadK is returned (wrapped) by Next for k < 1.
var ErrBadK = errors.New("toolgraph: k must be at least 1")

// Load builds the Graph of the toolgraph projection in store. Errors are
// store or row-decoding errors.
func Load(store *projections.Store) (*Graph, error) {
	return loadGraph(func(prefix string, fn func(key string, val []byte) (bool, error)) error {
		return store.Scan(Name, prefix, "", fn)
	})
}

// Version is the number of tool calls the projection has learned from; the
// Graph of Load changes only when it does. One row read.
func Version(store *projections.Store) (int, error) {
	var t totalsRow
	_, err := store.GetJSON(Name, totalsKey, &t)
	return t.Calls, err
}

// Next is Graph.Next over the projection in store: the k most likely tools
// after the tools in after (oldest first), for GET /v1/graph/next. Errors:
// ErrBadK for k < 1, store errors.
func Next(store *projections.Store, after []string, k int) (Prediction, error) {
	if k < 1 {
		return Prediction{}, fmt.Errorf("%w (got %d)", ErrBadK, k)
	}
	g, err := Load(store)
	if err != nil {
		return Prediction{}, err
	}
	return g.Next(after, k), nil
}

// Tools is Graph.Tools over the projection in store: every tool with its
// PageRank, community, degrees and counts, by decreasing PageRank.
func Tools(store *projections.Store) ([]ToolInfo, error) {
	g, err := Load(store)
	if err != nil {
		return nil, err
	}
	return g.Tools(), nil
}

// Path is Graph.Path over the projection in store, for
// GET /v1/graph/path?from=&to=. Errors: ErrUnknownTool, ErrNoPath (both
// wrapped; map them to 404), store errors.
func Path(store *projections.Store, from, to string) (Route, error) {
	g, err := Load(store)
	if err != nil {
		return Route{}, err
	}
	return g.Path(from, to)
}
