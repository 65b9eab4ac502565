package httpapi

import (
	"net/http"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
)

// Dead-letter list defaults: GET /v1/deadletters answers
// DefaultDeadLetterList letters when limit is absent, and at most
// MaxDeadLetterList.
const (
	DefaultDeadLetterList = 50
	MaxDeadLetterList     = 500
)

// DeadLetterList is the answer of GET /v1/deadletters: a page of dead
// letters in key order (scope, then newest first) and the cursor of the
// next page ("" on the last page).
type DeadLetterList = deadletter.ListPage

// deadLetterListParams reads GET /v1/deadletters' query: limit (1 to
// MaxDeadLetterList; absent: DefaultDeadLetterList; else 400 naming
// limit), cursor (a next_cursor; anything else: 400 naming cursor), type
// (only letters of events of that type; any string but the empty one, as a
// record refused for its unknown type has one), key (only letters of
// records of that key, <scope>/<id> as a letter's key reads: one entity's,
// e.g. org:default/s1 for search s1 of org:default; not that form: 400
// naming key; a scope the token does not read: 403 naming key) and scope
// (a kind or one scope; one the token does not read: 403).
// With w nil it only reads them.
func deadLetterListParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, match func(deadletter.Entry) bool, inScope func(string) bool, ok bool) {
	q := r.URL.Query()
	fail := func(code int, err error) (int, string, func(deadletter.Entry) bool, func(string) bool, bool) {
		if w != nil {
			writeErrOf(w, code, err)
		}
		return 0, "", nil, nil, false
	}
	limit, inScope, code, err := pageParams(r, DefaultDeadLetterList, MaxDeadLetterList)
	if err != nil {
		return fail(code, err)
	}
	ofType := q.Get("type")
	if q.Has("type") && ofType == "" {
		// any other string: a record refused for its unknown type has one
		return fail(http.StatusBadRequest, paramErr("type", "empty; give an event type (e.g. search.quota.reserved.v1) or leave type out"))
	}
	key := q.Get("key")
	if q.Has("key") {
		// one entity's letters: an integrator driving a search through
		// POST /v1/events, every step a 202, could find the refusals of
		// one search only among every letter of its scope (a tree-search
		// walkthrough, 2026-12-07)
		sc, id, split := events.SplitEntityKey(key)
		if !split || !events.ValidScope(sc) || events.CheckID(id) != nil {
			return fail(http.StatusBadRequest, paramErr("key", "%q is not <scope>/<id>, a letter's key (e.g. org:default/s1: search, session or workflow s1 of org:default)", key))
		}
		if !CallerOf(r).CanRead(sc) {
			return fail(http.StatusForbidden, paramErr("key", "this token may not read %s", sc))
		}
	}
	match = func(e deadletter.Entry) bool {
		return (ofType == "" || e.EventType == ofType) && (key == "" || e.Key == key)
	}
	cursor = q.Get("cursor")
	if cursor != "" { // empty: the first page, as on every list
		if err := deadletter.CheckCursor(cursor); err != nil {
			return fail(http.StatusBadRequest, paramErr("cursor", "%q is not a next_cursor of this list: %v", cursor, err))
		}
	}
	return limit, cursor, match, inScope, true
}

// listDeadLettersLocal lists the dead letters of this instance's store
// that the caller may read (and ?scope= and ?type= select): a 503
// RestoringError while it restores a partition of chronicle.deadletter.
func (s *Server) listDeadLettersLocal(w http.ResponseWriter, r *http.Request) {
	limit, cursor, match, inScope, ok := deadLetterListParams(w, r)
	if !ok {
		return
	}
	serveLocalList(s, w, r, string(events.TopicDeadLetter), "dead letters", inScope,
		func(scopes []string, allow func(string) bool) ([]deadletter.Entry, string, error) {
			return deadletter.ListScopedMatching(s.P.Store, scopes, allow, limit, cursor, match)
		},
		func(rows []deadletter.Entry, next string) any {
			return DeadLetterList{DeadLetters: rows, NextCursor: next}
		})
}

// listDeadLetters serves GET /v1/deadletters: the dead letters of the
// events of the scopes the caller reads (a processor's or worker's
// refusal of an event the API had accepted with 202), by scope and newest
// first within a scope, limit at a time. In a cluster each member's store
// holds the letters of its partitions of chronicle.deadletter, so it asks
// every member and merges their pages by key, as GET /v1/workflows does.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	serveMergedList(s, w, r, mergedList[deadletter.Entry]{
		topic: string(events.TopicDeadLetter), member: "dead_letters", noun: "dead letter", local: s.listDeadLettersLocal,
		limit: func(w http.ResponseWriter, r *http.Request) (int, bool) {
			limit, _, _, _, ok := deadLetterListParams(w, r)
			return limit, ok
		},
		key: deadletter.Entry.Cursor,
		answer: func(rows []deadletter.Entry, next string) any {
			return DeadLetterList{DeadLetters: rows, NextCursor: next}
		},
	})
}
