package memories_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/processors/memories"
)

// TestRetrievalQueryVisible: the rule of who sees a retrieval's query in
// a memory's history, including retrievals written before reader_scopes
// existed (shown only to readers of every scope and to the searcher).
func TestRetrievalQueryVisible(t *testing.T) {
	reads := func(scopes ...string) func(string) bool {
		return func(sc string) bool {
			for _, s := range scopes {
				if s == sc {
					return true
				}
			}
			return false
		}
	}
	old := memories.Retrieval{Source: "token:admin", Query: "q"}
	star := memories.Retrieval{Source: "token:admin", Query: "q", ReaderScopes: []string{"*"}}
	ab := memories.Retrieval{Source: "token:ab", Query: "q", ReaderScopes: []string{"project:a", "project:b"}}
	for _, c := range []struct {
		name     string
		r        memories.Retrieval
		source   string
		readsAll bool
		canRead  func(string) bool
		want     bool
	}{
		{"old event, one-scope reader", old, "token:a", false, reads("project:a"), false},
		{"old event, reader of every scope", old, "token:x", true, reads(), true},
		{"old event, its searcher", old, "token:admin", false, reads(), true},
		{"* searcher, one-scope reader", star, "token:a", false, reads("project:a"), false},
		{"a+b searcher, a reader", ab, "token:a", false, reads("project:a"), false},
		{"a+b searcher, a+b+c reader", ab, "token:abc", false, reads("project:a", "project:b", "project:c"), true},
		{"no source, same empty source", memories.Retrieval{Query: "q"}, "", false, reads(), false},
	} {
		if got := c.r.QueryVisible(c.source, c.readsAll, c.canRead); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := memories.ReaderScopes([]string{"project:b", "project:a", "project:b", "bad scope"}); len(got) != 2 || got[0] != "project:a" || got[1] != "project:b" {
		t.Errorf("ReaderScopes: %v", got)
	}
	if got := memories.ReaderScopes([]string{"project:a", "*"}); len(got) != 1 || got[0] != "*" {
		t.Errorf("ReaderScopes with *: %v", got)
	}
}
