package toolgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Read-only queries over the projection. Each call reads the rows it needs
// from the store and builds the Graph; a server answering many queries can
// call Load once and reuse the Graph while Version is unchanged (the graph
// algorithms themselves are pure functions of the Graph).

// ErrBadK is returned (wrapped) by Next for k < 1.
var ErrBadK = errors.New("toolgraph: k must be at least 1")

// Load builds the Graph of every scope of the toolgraph projection in
// store: their union (an org-wide view; counts summed per tool and edge).
// Errors are store or row-decoding errors.
func Load(store *projections.Store) (*Graph, error) { return LoadIn(store, nil) }

// LoadIn builds the union of the graphs of scopes (nil: every scope; an
// empty list: the empty graph). Each scope's graph is learned from that
// scope's tool calls only, so a project's predictions never depend on
// another's events; a caller reading several scopes sees their union.
func LoadIn(store *projections.Store, scopes []string) (*Graph, error) {
	if scopes != nil && len(scopes) == 0 {
		return NewGraph(), nil
	}
	return loadGraph(func(prefix string, fn func(key string, val []byte) (bool, error)) error {
		return store.Scan(Name, prefix, "", fn)
	}, scopes, true)
}

// Version is the number of tool calls the projection has learned from in
// scopes (nil: every scope); the Graph of LoadIn changes only when it
// does. One row read per scope (a scan of the t/ rows for nil).
func Version(store *projections.Store, scopes []string) (int, error) {
	n := 0
	if scopes == nil {
		err := store.Scan(Name, "t/", "", func(_ string, val []byte) (bool, error) {
			var t totalsRow
			if err := json.Unmarshal(val, &t); err != nil {
				return false, err
			}
			n += t.Calls
			return true, nil
		})
		return n, err
	}
	for _, sc := range scopes {
		var t totalsRow
		if _, err := store.GetJSON(Name, totalsKey(sc), &t); err != nil {
			return 0, err
		}
		n += t.Calls
	}
	return n, nil
}

// Scopes lists the scopes the projection holds a graph of, sorted.
func Scopes(store *projections.Store) ([]string, error) {
	var out []string
	err := store.Scan(Name, "t/", "", func(key string, _ []byte) (bool, error) {
		sc, err := url.PathUnescape(strings.TrimPrefix(key, "t/"))
		if err != nil {
			return false, err
		}
		out = append(out, sc)
		return true, nil
	})
	return out, err
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

// ApplyLocally applies env at pos with Transitions and then every
// tool.transition.observed.v1 it emitted with agg, at the next offsets of
// partition 0 of chronicle.toolgraph: the two steps the pipeline takes
// through the log, for evaluations and tests that learn a graph in a store
// without a broker. The result is Transitions' (Duplicate for a
// redelivered event, which emits nothing). Errors are Apply's.
func ApplyLocally(store *projections.Store, agg Processor, pos projections.Position, env *events.Envelope) (projections.Result, error) {
	var emitted []projections.OutboxRecord
	res, err := store.Apply(TransitionsName, pos, env, func(tx *projections.Tx, env *events.Envelope) error {
		err := Transitions{}.Apply(tx, env)
		emitted = tx.Emitted()
		return err
	})
	if err != nil || res != projections.Applied {
		return res, err
	}
	for _, rec := range emitted {
		tr, err := events.ParseEvent(rec.Value)
		if err != nil {
			return res, err
		}
		next, _ := store.NextOffset(Name, string(events.TopicToolgraph), 0)
		if _, err := store.Apply(Name, projections.Position{Topic: string(events.TopicToolgraph), Offset: next}, &tr, agg.Apply); err != nil {
			return res, err
		}
	}
	return res, nil
}
