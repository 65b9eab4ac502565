package httpapi

import (
	"net/http"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// Memory list defaults: GET /v1/memories answers DefaultMemoryList
// memories when limit is absent, and at most MaxMemoryList.
const (
	DefaultMemoryList = 50
	MaxMemoryList     = 500
)

// MemoryListPageBytes bounds a page of GET /v1/memories: it ends before
// the memory that would take it past this many bytes (about: their
// JSON), holding at least one, with its next_cursor, as the other pages of
// large entities are bounded (a memory's content may be close to the
// event limit); a variable for tests.
var MemoryListPageBytes = 4 << 20

// MemoryList is the answer of GET /v1/memories: a page of memories, each
// as GET /v1/memories/{id} answers it, in key order (scope, '/', id: by id
// within a scope) and the cursor of the next page ("" on the last page).
type MemoryList = memories.ListPage

// memoryListParams reads GET /v1/memories' limit, cursor (a next_cursor:
// <scope>/<memory id>) and scope (a kind or one scope; one the token does
// not read: 403), as GET /v1/reasoning does (keyListParams).
func memoryListParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, inScope func(string) bool, ok bool) {
	return keyListParams(w, r, DefaultMemoryList, MaxMemoryList, "memory", "mem-1")
}

// listMemories serves GET /v1/memories: the memories of the scopes the
// caller reads (?scope= narrows them to a kind or one scope), pruned ones
// included, in key order, limit at a time; a 503 RestoringError while this
// instance restores chronicle.memories. The memory bank is the single
// partition of chronicle.memories, so in a cluster the route is sent to
// that partition's owner (toTopicOwner), as GET /v1/memories/search and
// GET /v1/memories/{id} are, where the other list routes merge every
// member's page. Key order, not newest first: memory ids are content
// addresses, so a cursor after a key stays valid while memories are
// recorded and merged, and paging the whole bank lists each memory at
// most once (one recorded meanwhile shows when its key is after the
// cursor); newest first would need an index by time. Before, the bank could only be searched, 20
// hits at most (an analyst's walkthrough, 2026-12-07).
func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	limit, cursor, inScope, ok := memoryListParams(w, r)
	if !ok {
		return
	}
	serveLocalList(s, w, r, string(events.TopicMemories), "memories", inScope,
		func(scopes []string, allow func(string) bool) ([]memories.Memory, string, error) {
			return memories.List(s.P.Store, scopes, allow, limit, MemoryListPageBytes, cursor)
		},
		func(rows []memories.Memory, next string) any {
			return MemoryList{Memories: rows, NextCursor: next}
		})
}
