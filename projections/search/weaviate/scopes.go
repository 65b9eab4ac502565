package weaviate

import (
	"context"
	"sort"
	"sync"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/graphql"
)

// scopeSet is the set of scopes a collection is known to hold, so that
// Candidates can push Filter.Readable — a Go function of the scope that
// Weaviate cannot evaluate — down into the query as
// Not(scope ContainsAny [the known scopes Readable refuses]).
//
// The set is seeded once from the server (an Aggregate grouped by scope),
// then grows with every Upsert and with every scope a query returns that
// the filter then refuses. It may be stale (another process wrote a new
// scope): Candidates still checks every object with Filter.Admits, learns
// the scope of an object it refuses, and asks again with the larger
// filter, so the results are those of a filter evaluated in Go. Scopes are
// never removed: a scope no object holds any more only lengthens the
// filter.
type scopeSet struct {
	mu     sync.Mutex
	seeded bool
	known  map[string]bool
}

// add records scopes; it reports whether any was new.
func (ss *scopeSet) add(scopes ...string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	added := false
	for _, sc := range scopes {
		if !ss.known[sc] {
			ss.known[sc] = true
			added = true
		}
	}
	return added
}

// refused is the known scopes readable refuses, sorted.
func (ss *scopeSet) refused(readable func(scope string) bool) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []string
	for sc := range ss.known {
		if !readable(sc) {
			out = append(out, sc)
		}
	}
	sort.Strings(out)
	return out
}

// scopeSet is the scope set of the collection s serves, seeded from the
// server on first use (one Aggregate query grouped by scope, up to
// Config.MaxFetch scopes; the rest are learned from results).
func (s *Store) scopeSet(ctx context.Context) (*scopeSet, error) {
	ss := s.scopes[s.class]
	ss.mu.Lock()
	seeded := ss.seeded
	ss.mu.Unlock()
	if seeded {
		return ss, nil
	}
	var out struct {
		Aggregate map[string][]struct {
			GroupedBy struct {
				Value string `json:"value"`
			} `json:"groupedBy"`
		} `json:"Aggregate"`
	}
	agg := s.client.GraphQL().Aggregate().WithClassName(s.class).WithGroupBy("scope").WithLimit(s.cfg.MaxFetch).
		WithFields(graphql.Field{Name: "groupedBy", Fields: []graphql.Field{{Name: "value"}}})
	if err := s.query(ctx, "scopes", agg.Do, &out); err != nil {
		return nil, err
	}
	var scopes []string
	for _, g := range out.Aggregate[s.class] {
		scopes = append(scopes, g.GroupedBy.Value)
	}
	ss.add(scopes...)
	ss.mu.Lock()
	ss.seeded = true
	ss.mu.Unlock()
	return ss, nil
}
