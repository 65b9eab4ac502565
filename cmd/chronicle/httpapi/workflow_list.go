package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// Workflow list defaults: GET /v1/workflows answers DefaultWorkflowList
// workflows when limit is absent, and at most MaxWorkflowList.
const (
	DefaultWorkflowList = 50
	MaxWorkflowList     = 500
)

// WorkflowList is the answer of GET /v1/workflows: a page of workflow
// summaries in key order (scope, '/', id: by id within a scope) and the
// cursor of the next page ("" on the last page).
type WorkflowList = workflows.ListPage

// workflowListParams reads GET /v1/workflows' query: limit (1 to
// MaxWorkflowList; absent: DefaultWorkflowList; empty, 0, negative, above
// the maximum or not an integer: 400 naming limit), cursor (a next_cursor:
// <scope>/<workflow id>; anything else: 400 naming cursor) and scope (a
// kind or one scope; one the token does not read: 403). With w nil it
// only reads them.
func workflowListParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, inScope func(string) bool, ok bool) {
	q := r.URL.Query()
	fail := func(code int, err error) (int, string, func(string) bool, bool) {
		if w != nil {
			writeErrOf(w, code, err)
		}
		return 0, "", nil, false
	}
	limit, inScope, code, err := pageParams(r, DefaultWorkflowList, MaxWorkflowList)
	if err != nil {
		return fail(code, err)
	}
	cursor = q.Get("cursor")
	// empty: the first page, as on GET /v1/sessions and a workflow's
	// checkpoints, and what the last page's next_cursor says (it was a
	// 400 here: a walkthrough, 2026-11-30)
	if err := checkKeyCursor(cursor, "workflow", "w-1"); err != nil {
		return fail(http.StatusBadRequest, err)
	}
	return limit, cursor, inScope, true
}

// checkKeyCursor checks the cursor of a list keyed by entity key
// (<scope>/<id>): nil for "" (the first page) and for a key, else an
// error naming cursor and what is wrong; noun and example name the
// entity ("workflow", "w-1").
func checkKeyCursor(cursor, noun, example string) error {
	if cursor == "" {
		return nil
	}
	sc, id, split := events.SplitEntityKey(cursor)
	why := ""
	switch {
	case !split:
		why = "no '/' between a scope and a " + noun + " id"
	case !events.ValidScope(sc):
		why = fmt.Sprintf("%q is not a scope (project:<id>, team:<id>, org:<id>)", sc)
	default:
		if err := events.CheckID(id); err != nil {
			why = fmt.Sprintf("%s id %q: %v", noun, id, err)
		}
	}
	if why != "" {
		return paramErr("cursor", "%q is not a next_cursor of this list (<scope>/<%s id>, e.g. project:a/%s): %s", cursor, noun, example, why)
	}
	return nil
}

// listWorkflowsLocal lists the workflows of this instance's store that the
// caller may read (and ?scope= selects): a 503 RestoringError while it
// restores a partition of chronicle.workflows (a page would miss the
// workflows of records not applied yet, and a cursor past them would skip
// them for good). A token that reads named scopes reads only their rows.
func (s *Server) listWorkflowsLocal(w http.ResponseWriter, r *http.Request) {
	limit, cursor, inScope, ok := workflowListParams(w, r)
	if !ok {
		return
	}
	serveLocalList(s, w, r, string(events.TopicWorkflows), "workflows", inScope,
		func(scopes []string, allow func(string) bool) ([]workflows.Summary, string, error) {
			return workflows.List(s.P.Store, scopes, allow, limit, cursor)
		},
		func(rows []workflows.Summary, next string) any {
			return WorkflowList{Workflows: rows, NextCursor: next}
		})
}

// serveLocalList answers a list route from this instance's store: a 503
// RestoringError while it restores a partition of topic (a page would miss
// the rows of records not applied yet, and a cursor past them would skip
// them for good; what names the rows), else list's page of the scopes
// the caller reads and inScope admits (listScopes; nil rows answered as
// an empty list), as answer builds the body. GET /v1/workflows,
// /v1/deadletters and /v1/reasoning use it.
func serveLocalList[T any](s *Server, w http.ResponseWriter, r *http.Request, topic, what string, inScope func(string) bool,
	list func(scopes []string, allow func(string) bool) ([]T, string, error), answer func(rows []T, next string) any) {
	if parts := s.restoring(topic); len(parts) > 0 {
		writeRestoring(w, "the list would miss "+what, topic, parts)
		return
	}
	scopes, allow := listScopes(r, inScope)
	rows, next, err := list(scopes, allow)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if rows == nil {
		rows = []T{}
	}
	writeJSON(w, http.StatusOK, answer(rows, next))
}

// pageParams reads a list route's limit (absent: def; not an integer from
// 1 to max: a 400 naming limit) and scope (a kind or one scope, see
// scopeFilter; one the token does not read: a 403, as GET /v1/sessions
// answers, not an empty list that reads as "none there"). err is the
// refusal, code its status. GET /v1/workflows and GET /v1/deadletters use
// it.
func pageParams(r *http.Request, def, max int) (limit int, inScope func(string) bool, code int, err error) {
	q := r.URL.Query()
	limit = def
	if q.Has("limit") {
		l := q.Get("limit")
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > max {
			return 0, nil, http.StatusBadRequest, paramErr("limit", "%q is not an integer from 1 to %d (absent: %d)", l, max, def)
		}
		limit = n
	}
	if inScope, err = scopeFilter(q.Get("scope")); err != nil {
		return 0, nil, http.StatusBadRequest, err
	}
	if sc := q.Get("scope"); events.ValidScope(sc) && !CallerOf(r).CanRead(sc) {
		return 0, nil, http.StatusForbidden, paramErr("scope", "this token may not read %s", sc)
	}
	return limit, inScope, 0, nil
}

// listScopes are the scopes a list route reads for r's caller: nil for a
// caller that reads every scope (allow filters the rows), the ?scope= one
// scope when it names one (the route's parameter check found it
// readable), else the caller's readable scopes that inScope (?scope='s
// kind) admits; allow admits a row's scope when the caller reads it and
// inScope admits it. GET /v1/workflows and GET /v1/deadletters use it.
func listScopes(r *http.Request, inScope func(string) bool) (scopes []string, allow func(string) bool) {
	c := CallerOf(r)
	allow = func(sc string) bool { return c.CanRead(sc) && inScope(sc) }
	if sc := r.URL.Query().Get("scope"); events.ValidScope(sc) {
		return []string{sc}, allow
	}
	if c.ReadsAll() {
		return nil, allow
	}
	scopes = []string{}
	for _, sc := range c.Read {
		if events.ValidScope(sc) && inScope(sc) && !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return scopes, allow
}

// listWorkflows serves GET /v1/workflows: the workflows of the scopes the
// caller reads (?scope= narrows them to a kind or one scope), in key
// order, limit at a time (default DefaultWorkflowList, at most
// MaxWorkflowList), next_cursor naming the last key of a page that has
// more after it; in a cluster every member's store, merged by key
// (serveMergedList).
func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	serveMergedList(s, w, r, mergedList[workflows.Summary]{
		topic: string(events.TopicWorkflows), member: "workflows", noun: "workflow", local: s.listWorkflowsLocal,
		limit: func(w http.ResponseWriter, r *http.Request) (int, bool) {
			limit, _, _, ok := workflowListParams(w, r)
			return limit, ok
		},
		key: workflows.Summary.Key,
		answer: func(rows []workflows.Summary, next string) any {
			return WorkflowList{Workflows: rows, NextCursor: next}
		},
	})
}

// mergedList is what serveMergedList needs of a list route whose rows
// follow the partitions of one topic, so that each member's store holds
// those of its partitions.
type mergedList[T any] struct {
	topic  string           // the topic whose partitions the rows follow
	member string           // the answer's JSON member that holds the rows
	noun   string           // a row, in errors ("workflow")
	local  http.HandlerFunc // the list of this store alone
	// limit checks the request's parameters once, answering a 400 on w
	// when they are bad (ok false), and gives the page size; w is nil
	// when only the size is wanted
	limit  func(w http.ResponseWriter, r *http.Request) (int, bool)
	key    func(T) string                  // a row's key: the pages' order and cursor
	answer func(rows []T, next string) any // the answer's body
}

// serveMergedList serves a list route from every member's store. Alone,
// or asked by another member (ForwardedHeader), it lists this instance's
// store (l.local). In a cluster it asks every member for its page after
// the cursor (in parallel, each bounded by ForwardTimeout) and merges them
// by key: the first limit keys of the union are the first limit keys
// after the cursor overall, so the pages are a correct pagination. A key
// two members answer (a partition's previous owner still holds an older
// copy) is the owner's. A member that does not answer, or answers 5xx,
// makes the whole list 503 (504 after the timeout) naming it, with
// Retry-After: no partial page, which would skip that member's rows for
// good; a partition without an owner (the group is moving it) is a 503
// too. GET /v1/workflows and GET /v1/deadletters use it.
func serveMergedList[T any](s *Server, w http.ResponseWriter, r *http.Request, l mergedList[T]) {
	if r.Header.Get(ForwardedHeader) != "" || s.P == nil || s.P.Runner == nil {
		l.local(w, r)
		return
	}
	v, err := s.settledView(r.Context(), l.topic)
	if err == nil && v.blind {
		s.noOwner(w, v, l.topic, -1, "the list")
		return
	}
	if s.listInOutage(w, err, l.topic) {
		return
	}
	if err != nil || !v.forwarding() {
		l.local(w, r)
		return
	}
	// refuse bad parameters once, here
	rec := httptest.NewRecorder()
	if _, ok := l.limit(rec, r); !ok {
		relay(w, memberAnswer{member: v.self, code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		return
	}
	if !v.complete(l.topic) {
		s.noOwner(w, v, l.topic, -1, "the list")
		return
	}
	limit, _ := l.limit(nil, r)
	answers := s.fanOut(r, v, l.local, false)
	if s.memberDown(w, v, answers) {
		return
	}
	raws, next, ok := mergePages(w, v, l.topic, l.member, answers, limit, func(raw json.RawMessage) string {
		var row T
		_ = json.Unmarshal(raw, &row)
		return l.key(row)
	})
	if !ok {
		return
	}
	list := make([]T, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &list[i]); err != nil {
			writeJSON(w, http.StatusBadGateway, ForwardError{Error: fmt.Sprintf("an unreadable %s in the members' lists: %v", l.noun, err)})
			return
		}
	}
	w.Header().Set(ServedByHeader, strings.Join(v.members, ","))
	writeJSON(w, http.StatusOK, l.answer(list, next))
}
