package treesearch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Get returns the search whose events.EntityKey is key; ok is false when
// the projection has no such search.
func Get(store *projections.Store, key string) (Search, bool, error) {
	var s Search
	ok, err := store.GetJSON(Name, searchRow(key), &s)
	return s, ok, err
}

// GetNode returns node id of search key.
func GetNode(store *projections.Store, key, id string) (Node, bool, error) {
	var n Node
	ok, err := store.GetJSON(Name, nodeRow(key, id), &n)
	return n, ok, err
}

// Closed returns the node that first reached the state with this digest,
// when the state is in the search's closed set.
func Closed(store *projections.Store, key, digest string) (string, bool, error) {
	v, ok, err := store.Get(Name, closedRow(key, digest))
	return string(v), ok, err
}

// ClosedSet returns the search's closed set: state digest → the node that
// first reached it.
func ClosedSet(store *projections.Store, key string) (map[string]string, error) {
	out := map[string]string{}
	p := closedPrefix(key)
	err := store.Scan(Name, p, "", func(k string, v []byte) (bool, error) {
		out[strings.TrimPrefix(k, p)] = string(v)
		return true, nil
	})
	return out, err
}

// Nodes returns up to limit nodes of search key in node-id order after the
// node id cursor (exclusive), and the cursor of the next page ("" at the
// end). limit ≤ 0 returns every node.
func Nodes(store *projections.Store, key string, limit int, cursor string) ([]Node, string, error) {
	return NodesWithin(store, key, limit, 0, cursor)
}

// NodesWithin is Nodes, and ends a page before the node that would take
// its stored rows past maxBytes (≤ 0: no bound), so a page of nodes with
// large states stays bounded in memory and on the wire; a page holds at
// least one node, whatever its size.
func NodesWithin(store *projections.Store, key string, limit, maxBytes int, cursor string) ([]Node, string, error) {
	p := nodePrefix(key)
	after := ""
	if cursor != "" {
		after = p + cursor
	}
	var out []Node
	next := ""
	size := 0
	err := store.Scan(Name, p, after, func(k string, v []byte) (bool, error) {
		if limit > 0 && len(out) == limit || maxBytes > 0 && len(out) > 0 && size+len(v) > maxBytes {
			next = out[len(out)-1].ID
			return false, nil
		}
		size += len(v)
		var n Node
		if err := json.Unmarshal(v, &n); err != nil {
			return false, err
		}
		out = append(out, n)
		return true, nil
	})
	return out, next, err
}

// HasNode reports whether the search with key holds a node with id (a
// Nodes cursor names one).
func HasNode(store *projections.Store, key, id string) (bool, error) {
	_, ok, err := store.Get(Name, nodePrefix(key)+id)
	return ok, err
}

// Scopes lists the scopes whose projection holds a search with this bare
// id, for routes that resolve an id without ?scope=.
func Scopes(store *projections.Store, id string) ([]string, error) { return store.ScopesOf(Name, id) }

// Fingerprint is a SHA-256 over what a search decided — its status,
// outcome, path, answer, open set, expansion in flight, quota, counts, each
// node without its event time, and its closed set — leaving out wall-clock
// times, so two runs of the same search (one of them interrupted and
// resumed) can be compared. The projection digest covers times too.
func Fingerprint(store *projections.Store, key string) (string, error) {
	s, ok, err := Get(store, key)
	if err != nil || !ok {
		return "", err
	}
	s.StartedAt, s.CompletedAt = "", ""
	for i := range s.Decisions {
		s.Decisions[i].Time = ""
	}
	h := sha256.New()
	b, _ := json.Marshal(s)
	h.Write(b)
	nodes, _, err := Nodes(store, key, 0, "")
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		n.Time = ""
		b, _ := json.Marshal(n)
		h.Write(b)
	}
	closed, err := ClosedSet(store, key)
	if err != nil {
		return "", err
	}
	b, _ = json.Marshal(closed) // map keys sorted
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Summary is a search as GET /v1/searches lists it: Search without its
// open set, path, decisions and locks, which can be large (GET
// /v1/searches/{id} answers them).
type Summary struct {
	ID          string                 `json:"id"`
	Scope       string                 `json:"scope"`
	Goal        string                 `json:"goal"`
	Proposer    events.SearchComponent `json:"proposer"`
	Evaluator   events.SearchComponent `json:"evaluator"`
	Status      string                 `json:"status"`
	Outcome     string                 `json:"outcome,omitempty"`
	Answer      string                 `json:"answer,omitempty"`
	Expansions  int                    `json:"expansions"`
	PausedAt    string                 `json:"paused_at,omitempty"`
	Question    string                 `json:"question,omitempty"`
	StartedAt   string                 `json:"started_at"`
	CompletedAt string                 `json:"completed_at,omitempty"`
}

// Key is the search's events.EntityKey, a list's cursor.
func (s Summary) Key() string { return events.EntityKey(s.Scope, s.ID) }

// List lists a page of the searches of scopes (nil: every scope, those
// allow refuses skipped) in key order (scope, '/', id), after cursor (a
// Summary.Key, "" from the first), at most limit (≥ 1); next is the key
// of the last one when more follow, else "" (projections.ListScoped).
// Errors: the store's, or a row that does not decode.
func List(store *projections.Store, scopes []string, allow func(scope string) bool, limit int, cursor string) (list []Summary, next string, err error) {
	return projections.ListScoped(store, Name, "s/", scopes, allow, limit, cursor, func(key string, val []byte) (Summary, bool, error) {
		var s Summary
		if err := json.Unmarshal(val, &s); err != nil {
			return s, false, fmt.Errorf("treesearch: search %s: %w", key, err)
		}
		return s, true, nil
	})
}
