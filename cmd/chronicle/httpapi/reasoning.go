package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/passes"
)

// reasoningRoutes serves GET /v1/reasoning/{task} (the task's current
// state: status, convergence, plan, profile) and
// GET /v1/reasoning/{task}/history (its passes in order). The task id is
// resolved like a session's: one path segment with '/' as %2F, ?scope=
// or the one readable scope that holds it; 404 for another scope's task.
func (s *Server) reasoningRoutes(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/reasoning/"), "history")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	key, ok := entityKey(w, r, "reasoning task", id, passes.Scopes, s.P.Store, CallerOf(r).CanRead, nil)
	if !ok {
		return
	}
	t, ok, err := passes.Get(s.P.Store, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	case !ok:
		entityNotFound(w, r, "reasoning task", id)
		return
	case suffix == "":
		writeJSON(w, http.StatusOK, t)
		return
	}
	after, limit, ok := historyPage(w, r, "a pass number")
	if !ok {
		return
	}
	h, more, err := passes.HistoryPage(s.P.Store, key, after, limit, HistoryPageBytes)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	v := ReasoningHistory{TaskID: t.ID, Scope: t.Scope, Status: t.Status, Passes: h}
	if v.Passes == nil {
		v.Passes = []passes.Pass{}
	}
	if more {
		v.NextCursor = strconv.Itoa(h[len(h)-1].PassNumber)
	}
	writeJSON(w, http.StatusOK, v)
}

// ReasoningHistory is the answer of GET /v1/reasoning/{id}/history: a page
// of the task's passes in pass order and the cursor of the next page (""
// on the last).
type ReasoningHistory struct {
	TaskID     string        `json:"task_id"`
	Scope      string        `json:"scope"`
	Status     string        `json:"status"`
	Passes     []passes.Pass `json:"passes"`
	NextCursor string        `json:"next_cursor"`
}

// HistoryPageBytes bounds a page of GET /v1/reasoning/{id}/history and of
// GET /v1/memories/{id}/history's retrievals: it ends before the pass (or
// retrieval) that would take it past this many bytes (about: their JSON),
// holding at least one, with its next_cursor — with or without limit, as
// the other per-entity lists are bounded (a variable for tests).
var HistoryPageBytes = 4 << 20

// historyPage reads GET /v1/reasoning/{id}/history's cursor (a
// next_cursor: the pass number the previous page ended with; the page
// starts after it) and limit (1 to 500; absent: every pass within
// HistoryPageBytes), answering 400 naming the parameter. Before, limit
// was ignored and the whole history came in one body. GET
// /v1/memories/{id}/history reads its parameters the same way, its cursor
// being the number of the page's first retrieval; unit names what a
// cursor counts in the 400.
func historyPage(w http.ResponseWriter, r *http.Request, unit string) (after, limit int, ok bool) {
	q := r.URL.Query()
	if l := q.Get("limit"); l != "" || q.Has("limit") {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer from 1 to 500", l))
			return 0, 0, false
		}
		limit = n
	}
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || strconv.Itoa(n) != c {
			writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a next_cursor of this list (%s)", c, unit))
			return 0, 0, false
		}
		after = n
	}
	return after, limit, true
}

// Reasoning task list defaults: GET /v1/reasoning answers
// DefaultReasoningList tasks when limit is absent, and at most
// MaxReasoningList.
const (
	DefaultReasoningList = 50
	MaxReasoningList     = 500
)

// ReasoningList is the answer of GET /v1/reasoning: a page of task
// summaries in key order (scope, '/', id) and the cursor of the next page
// ("" on the last page).
type ReasoningList = passes.ListPage

// reasoningListParams reads GET /v1/reasoning's limit, cursor (a
// next_cursor: <scope>/<task id>) and scope (keyListParams).
func reasoningListParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, inScope func(string) bool, ok bool) {
	return keyListParams(w, r, DefaultReasoningList, MaxReasoningList, "reasoning task", "q-7")
}

// keyListParams reads the limit (def when absent, at most max), cursor (a
// next_cursor: <scope>/<id> of the entity noun, example an id for the
// 400) and scope of a list keyed by entity key, as GET /v1/workflows does,
// answering a 400 (or the scope's 403) naming the parameter; with w nil it
// only reads them.
func keyListParams(w http.ResponseWriter, r *http.Request, def, max int, noun, example string) (limit int, cursor string, inScope func(string) bool, ok bool) {
	limit, inScope, code, err := pageParams(r, def, max)
	if err == nil {
		cursor = r.URL.Query().Get("cursor")
		code, err = http.StatusBadRequest, checkKeyCursor(cursor, noun, example)
	}
	if err != nil {
		if w != nil {
			writeErrOf(w, code, err)
		}
		return 0, "", nil, false
	}
	return limit, cursor, inScope, true
}

// listReasoningLocal lists the reasoning tasks of this instance's store
// that the caller may read (and ?scope= selects): a 503 RestoringError
// while it restores a partition of chronicle.reasoning.
func (s *Server) listReasoningLocal(w http.ResponseWriter, r *http.Request) {
	limit, cursor, inScope, ok := reasoningListParams(w, r)
	if !ok {
		return
	}
	serveLocalList(s, w, r, string(events.TopicReasoning), "reasoning tasks", inScope,
		func(scopes []string, allow func(string) bool) ([]passes.Summary, string, error) {
			return passes.List(s.P.Store, scopes, allow, limit, cursor)
		},
		reasoningListAnswer)
}

// reasoningListAnswer is GET /v1/reasoning's body for a page.
func reasoningListAnswer(rows []passes.Summary, next string) any {
	return ReasoningList{Tasks: rows, NextCursor: next}
}

// listReasoning serves GET /v1/reasoning: the reasoning tasks of the
// scopes the caller reads (?scope= narrows them to a kind or one scope),
// in key order, limit at a time; in a cluster every member's store,
// merged by key (serveMergedList), as GET /v1/workflows.
func (s *Server) listReasoning(w http.ResponseWriter, r *http.Request) {
	serveMergedList(s, w, r, mergedList[passes.Summary]{
		topic: string(events.TopicReasoning), member: "tasks", noun: "reasoning task", local: s.listReasoningLocal,
		limit: func(w http.ResponseWriter, r *http.Request) (int, bool) {
			limit, _, _, ok := reasoningListParams(w, r)
			return limit, ok
		},
		key:    passes.Summary.Key,
		answer: reasoningListAnswer,
	})
}
