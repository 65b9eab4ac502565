package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// SearchView is GET /v1/searches/{id}: the search's projected state (status,
// open set = frontier, quota, counts, best path) with the nodes of its best
// path: the winning path once solved, else the path to the head of the
// open set.
type SearchView struct {
	treesearch.Search
	BestPath []treesearch.Node `json:"best_path"`
}

// SearchNodesPageBytes bounds a page of GET /v1/searches/{id}/nodes: the
// page ends before the node that would take its nodes past this many bytes
// as stored (a page holds at least one node), and next_cursor goes on
// from there. Default 4 MiB. Before, only the count was bounded (limit ≤
// 1000), and a node's state may be close to the 960 KiB event limit: two
// nodes made a 1.5 MB answer, and a page of 1000 such nodes would have
// been held in memory whole, near 1 GB (a walkthrough, 2026-11-30).
var SearchNodesPageBytes = 4 << 20

// searchRoutes serves GET /v1/searches/{id} and GET /v1/searches/{id}/nodes
// (?limit=1..1000, default 500; ?cursor= the last node id of the previous
// page).
func (s *Server) searchRoutes(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/searches/"), "nodes", "panel")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	if suffix == "panel" {
		s.panelRoute(w, r, id)
		return
	}
	key, sr, ok := s.loadSearch(w, r, id, CallerOf(r).CanRead)
	if !ok {
		return
	}
	if suffix == "nodes" {
		limit := 500
		if l := r.URL.Query().Get("limit"); l != "" {
			if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > 1000 {
				writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer in 1..1000", l))
				return
			}
		}
		cursor := r.URL.Query().Get("cursor")
		if cursor != "" {
			ok, err := treesearch.HasNode(s.P.Store, key, cursor)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, "%v", err)
				return
			}
			if !ok {
				writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a node of this search (pass next_cursor of the previous page)", cursor))
				return
			}
		}
		nodes, next, err := treesearch.NodesWithin(s.P.Store, key, limit, SearchNodesPageBytes, cursor)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		}
		if nodes == nil {
			nodes = []treesearch.Node{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "next_cursor": next})
		return
	}
	v := s.searchView(key, sr)
	writeJSON(w, http.StatusOK, v)
}

// PanelView is GET /v1/searches/{id}/panel: a consensus panel (parallel
// branches of one task, search.branch.completed.v1) with its branches in
// log order (each in full; the projection's list of branch ids is
// replaced by them), the reducers' checked decisions and the number of
// outputs corrected by a JSON Patch.
type PanelView struct {
	treesearch.Panel
	Branches []treesearch.Branch `json:"branches"`
}

// panelRoute serves GET /v1/searches/{id}/panel: 200 PanelView, 404 when
// no panel has the id in a scope the caller reads.
func (s *Server) panelRoute(w http.ResponseWriter, r *http.Request, id string) {
	key, ok := entityKey(w, r, "panel", id, treesearch.Scopes, s.P.Store, CallerOf(r).CanRead, nil)
	if !ok {
		return
	}
	p, bs, ok, err := treesearch.GetPanel(s.P.Store, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	case !ok:
		if _, isSearch, _ := treesearch.Get(s.P.Store, key); isSearch {
			// a Beam-A* search has no panel: the hint pointed to the dead
			// letters, where there was nothing (a walkthrough)
			writeErr(w, http.StatusNotFound, "panel %q not found: %q is a Beam-A* search, read at GET /v1/searches/{id}; a panel is the search.branch.completed.v1 events of a consensus panel's search_id", id, id)
			return
		}
		entityNotFound(w, r, "panel", id)
		return
	}
	writeJSON(w, http.StatusOK, PanelView{Panel: p, Branches: bs})
}

// searchView is sr with the nodes of its best path.
func (s *Server) searchView(key string, sr treesearch.Search) SearchView {
	end := sr.GoalNode
	if end == "" && len(sr.Open) > 0 {
		end = sr.Open[0].ID
	}
	v := SearchView{Search: sr, BestPath: []treesearch.Node{}}
	for cur := end; cur != ""; {
		n, ok, err := treesearch.GetNode(s.P.Store, key, cur)
		if err != nil || !ok {
			break
		}
		v.BestPath = append([]treesearch.Node{n}, v.BestPath...)
		cur = n.Parent
	}
	return v
}

// resumeSearch serves POST /v1/searches/{id}/resume with the human's
// decision {"decision": "approve"|"reject", "note", "by"} on a paused
// search: it writes search.resumed.v1 (id derived from the search and the
// pause, so a retried request is one event) and answers 202 once the broker
// acknowledged it; 409 when the search is not paused. approve keeps the
// node at the head of the open set; reject prunes it (status rejected) and
// the search goes on with the rest of the frontier (completing as
// exhausted when none is left). A search of built-in components is then
// driven on by the pipeline's treesearch.ResumeWorker; any other by the
// runner that owns it.
func (s *Server) resumeSearch(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/searches/"), "resume")
	if err == nil && suffix != "resume" {
		writeErr(w, http.StatusNotFound, "no such route: POST %s (POST /v1/searches/{id}/resume)", r.URL.Path)
		return
	}
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	var body struct {
		Decision string `json:"decision"`
		Note     string `json:"note"`
		By       string `json:"by"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeBodyErr(w, err, ` (want {"decision": "approve"|"reject", "note", "by"})`)
		return
	}
	switch body.Decision {
	case "approve", "reject":
	case "":
		// left out (or ""): said as required, not as the value "" (an
		// OpenAPI walkthrough)
		writeFieldErr(w, "decision", "/decision", "required: approve or reject")
		return
	default:
		writeFieldErr(w, "decision", "/decision", fmt.Sprintf("%q is not approve or reject", body.Decision))
		return
	}
	// a resume answers the search's status (409 "completed, not
	// paused") and view: a scope the caller reads and writes
	// (readsAndWrites); a write-only caller gets the read's 404
	key, sr, ok := s.loadSearch(w, r, id, readsAndWrites(r))
	if !ok {
		return
	}
	if body.By, err = resumeBy(body.By, CallerOf(r), s.Tokens != nil); err != nil {
		// pointer and reason as a workflow decision answer's (before, the
		// text alone: an OpenAPI walkthrough)
		writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error(), Pointer: "/by", Reason: "must be the authenticated caller"})
		return
	}
	if sr.Status != treesearch.StatusPaused {
		// a retry of the resume that moved it on, whose first answer was
		// lost: answered as the first was, nothing written
		if out, ok, err := s.resumeRetry(key, sr, body.Decision, body.Note, body.By); err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		} else if ok {
			writeJSON(w, http.StatusAccepted, out)
			return
		}
		writeErr(w, http.StatusConflict, "search %q is %s, not paused", id, sr.Status)
		return
	}
	if what, reason := s.undrivable(key, sr); what != "" {
		writeJSON(w, http.StatusUnprocessableEntity, errorBody{Error: fmt.Sprintf("search %q: its %s: %s; nothing was written", id, what, reason), Reason: reason})
		return
	}
	out, err := s.publishResume(r.Context(), key, sr, body.Decision, body.Note, body.By)
	if err != nil {
		var ve *events.ValidationError
		switch {
		case errors.Is(err, errResumedAlready):
			writeErr(w, http.StatusConflict, "%v", err)
			return
		case errors.As(err, &ve):
			// the event's data member of the body's (note, by, decision):
			// the body's pointer, as every route's 400 names it, also in
			// the 413 of an event too large (before, the event's message
			// without a pointer, a walkthrough, 2026-11-30; and the 413
			// said "event 0: /data/note", an index and a pointer of no
			// request the caller sent)
			code := http.StatusBadRequest
			if errors.Is(err, events.ErrEventTooLarge) {
				code = http.StatusRequestEntityTooLarge
			}
			if m, ok := strings.CutPrefix(ve.Pointer, "/data/"); ok && (m == "note" || m == "by" || m == "decision") {
				reason := strings.ReplaceAll(ve.Reason, "in /data/"+m, "in the "+m)
				writeJSON(w, code, errorBody{Error: m + ": " + reason, Pointer: "/" + m, Reason: reason})
				return
			}
			if code == http.StatusRequestEntityTooLarge {
				writeJSON(w, code, errorBody{Error: ve.Reason, Reason: ve.Reason})
				return
			}
			writeErrOf(w, code, err)
			return
		case errors.Is(err, events.ErrEventTooLarge):
			writeErr(w, http.StatusRequestEntityTooLarge, "%v", err)
			return
		}
		writeErr(w, http.StatusServiceUnavailable, "not acknowledged by the broker, retry: %v", err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// undrivable says why the resume worker could not drive search sr (key)
// on after a resume, and what of the search is at fault ("" when it
// could): a search whose proposer and evaluator are the built-in Game of
// 24 components (game24.Builtin), whose root or an open node holds no
// Game of 24 state (game24.CheckState). Before, such a resume was a 202,
// and the worker then either failed on it (the search running for good,
// every later resume a 409) or, for a state of eight numbers, spent
// minutes of a core on it while every other search's resume waited (a
// walkthrough's finding).
func (s *Server) undrivable(key string, sr treesearch.Search) (what, reason string) {
	if _, _, ok := game24.Builtin(sr.Proposer, sr.Evaluator); !ok {
		return "", ""
	}
	if err := game24.CheckState(sr.RootState); err != nil {
		return "root_state", fmt.Sprintf("no Game of 24 puzzle for the built-in %s components to drive: %v", sr.Proposer.Name, err)
	}
	for _, o := range sr.Open {
		n, ok, err := treesearch.GetNode(s.P.Store, key, o.ID)
		if err != nil || !ok {
			continue // the worker reads it as the projection holds it
		}
		if err := game24.CheckState(n.State); err != nil {
			return "node " + o.ID + "'s state", fmt.Sprintf("no Game of 24 state for the built-in %s components to expand: %v", sr.Proposer.Name, err)
		}
	}
	return "", ""
}

// undrivableResumes refuses, as POST /v1/searches/{id}/resume does (422,
// the whole batch, nothing written), a search.resumed.v1 in envs whose
// search is paused in this member's store and could not be driven on by
// the resume worker (undrivable). Before, the same resume sent through
// POST /v1/events was a 202, the worker dead-lettered it, and the search
// stayed running with nobody to drive it (a walkthrough). A search this
// store does not hold (started in the same batch, or on a cluster member
// that does not own its partition) is not checked here: the worker then
// dead-letters the resume with the reason, as before.
func (s *Server) undrivableResumes(envs []events.Envelope) *errorBody {
	if s.P.Store == nil {
		return nil
	}
	for i := range envs {
		if envs[i].Type != events.SearchResumed {
			continue
		}
		var d events.SearchResumedData
		if envs[i].Decode(&d) != nil || d.SearchID == "" {
			continue // the schema check said so already
		}
		key := events.EntityKey(envs[i].EffectiveScope(), d.SearchID)
		sr, ok, err := treesearch.Get(s.P.Store, key)
		if err != nil || !ok || sr.Status != treesearch.StatusPaused {
			continue
		}
		if what, reason := s.undrivable(key, sr); what != "" {
			idx := i
			return &errorBody{Error: fmt.Sprintf("event %d: /data/search_id: search %q: its %s: %s; nothing was written", i, d.SearchID, what, reason),
				Index: &idx, Pointer: "/data/search_id", Reason: reason}
		}
	}
	return nil
}

// resumeBy is who a resume records (search.resumed.v1 data.by) for a
// request of caller c that sent by, under the memory bank's author rule
// (authorship.go): absent → "token:<caller>"; equal to it → kept; any
// other name → an error naming by (403). Before, the name the caller sent
// was recorded as is, "token:admin" from a project:a token included, the
// format /mcp records a real identity in, and nothing without it (found
// by an agent-runtime developer's walkthrough). On a service without
// tokens (loopback only) there is no identity to check a name against: a
// given name is kept as sent (a human's own label), an absent one is
// "token:local", the caller every request has there.
func resumeBy(by string, c access.Caller, tokens bool) (string, error) {
	who := "token:" + c.Name
	switch {
	case by == "":
		return who, nil
	case by == who || !tokens:
		return by, nil
	}
	return "", fmt.Errorf("by: %q is not this token's identity; leave it out (it is set to %s) or send %s", by, who, who)
}

// errResumedAlready: the pause a resume names was resumed with another
// decision (409).
var errResumedAlready = errors.New("resumed already")

// resumeApplyWait bounds how long a resume request waits for the
// projection to apply its event before answering 202 (it is written; it
// may be applied later).
const resumeApplyWait = 5 * time.Second

// publishResume writes search.resumed.v1 for paused search sr (id derived
// from the search and the pause, so a retried request is one event) and
// returns what POST /v1/searches/{id}/resume answers, once the projection
// applied it (at most resumeApplyWait). An error is a
// *events.ValidationError (bad input), errResumedAlready (the pause was
// resumed with another decision, or the search moved on) or the broker's.
func (s *Server) publishResume(ctx context.Context, key string, sr treesearch.Search, decision, note, by string) (map[string]any, error) {
	env, err := resumeEvent(key, sr, sr.PausedAt, sr.Seq, decision, note, by)
	if err != nil {
		return nil, err
	}
	// One resume at a time, each waiting (at most resumeApplyWait) until
	// the projection applied it, so the next one finds the search moved
	// on: 409. Before, concurrent requests were all answered 202 while
	// only the first was applied, the others dead-lettered as conflicting
	// duplicates (found by a new user's walkthrough). Resumes are human
	// decisions, rare: one lock for all searches of this instance (in a
	// cluster, a resume is served by its search's owner).
	s.resumeMu.Lock()
	defer s.resumeMu.Unlock()
	_, applied, same, err := s.P.Store.AppliedAt(treesearch.Name, &env)
	if err != nil {
		return nil, err
	}
	if !applied {
		if cur, ok, err := treesearch.Get(s.P.Store, key); err == nil && ok && (cur.Status != treesearch.StatusPaused || cur.Seq != sr.Seq) {
			applied = true // another resume moved it on since the caller read it
		}
	}
	if applied && same {
		// the content hash leaves the author out (events.AuthorMember), so
		// the same decision from another caller reads as a retry: it is one
		// only when the decision applied is this caller's. Before, six
		// callers approving one pause at once were all answered 202 while
		// the search named one of them (a concurrency walkthrough,
		// 2026-12-03)
		if cur, ok, err := treesearch.Get(s.P.Store, key); err != nil {
			return nil, err
		} else if ok {
			for _, d := range cur.Decisions {
				if d.NodeID == sr.PausedAt && d.Seq-1 == sr.Seq && d.By != by {
					return nil, fmt.Errorf("%w: node %s of search %q was resumed already, by %s (GET /v1/searches/%s shows the decision)", errResumedAlready, sr.PausedAt, sr.ID, d.By, url.PathEscape(sr.ID))
				}
			}
		}
	}
	switch {
	case applied && same:
		// a retry of the resume applied: answered as the first, nothing written
	case applied:
		return nil, fmt.Errorf("%w: node %s of search %q was resumed already (GET /v1/searches/%s shows the decision)", errResumedAlready, sr.PausedAt, sr.ID, url.PathEscape(sr.ID))
	default:
		if err := s.P.Producer.Publish(ctx, env); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(resumeApplyWait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if _, ok, _, err := s.P.Store.AppliedAt(treesearch.Name, &env); err != nil || ok {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return map[string]any{"id": env.ID, "search_id": sr.ID, "scope": sr.Scope, "node_id": sr.PausedAt, "decision": decision, "driver": resumeDriver(sr)}, nil
}

// Drivers of a resumed search, as a resume's answer names them (driver).
const (
	// DriverResumeWorker: serve's treesearch-resume worker runs the search
	// on (its proposer and evaluator are built in: game24.Builtin).
	DriverResumeWorker = "treesearch-resume"
	// DriverExternal: the search's components are the caller's own, so
	// whoever started it runs it on; nothing in serve does.
	DriverExternal = "external"
)

// resumeDriver names who runs search sr on after a resume: the resume
// worker for the built-in components, else whoever started it. Before,
// both answers were alike, and a person approving an integrator's search
// read a 202 while nothing moved until the integrator's runtime noticed
// (serve logged "need their own driver: left alone" on its stderr only: a
// tree-search walkthrough, 2026-12-07).
func resumeDriver(sr treesearch.Search) string {
	if _, _, ok := game24.Builtin(sr.Proposer, sr.Evaluator); ok {
		return DriverResumeWorker
	}
	return DriverExternal
}

// resumeEvent is the search.resumed.v1 event the route writes for a
// decision on the pause at node of search sr (key), when the search's Seq
// was seq: its id names the pause, so a retry has the same id.
func resumeEvent(key string, sr treesearch.Search, node string, seq int, decision, note, by string) (events.Envelope, error) {
	env, err := events.New(events.SearchResumed, "chronicle/httpapi", key+"/resumed/"+node+"/"+strconv.Itoa(seq), time.Now(),
		events.SearchResumedData{SearchID: sr.ID, Decision: decision, Note: note, By: by})
	if err != nil {
		return env, err
	}
	env.Scope, env.CorrelationID = sr.Scope, key
	return env, nil
}

// resumeRetry answers a resume of a search that is no longer paused: ok
// when the search's last decision was written by this route with the same
// decision, note and by (its event applied with that content), which makes
// the request a retry of it whose first answer was lost; the answer is the
// first one's. Before, such a retry was a 409 "not paused", which a
// client cannot tell from another decision having come first (found by a
// walkthrough).
func (s *Server) resumeRetry(key string, sr treesearch.Search, decision, note, by string) (map[string]any, bool, error) {
	if len(sr.Decisions) == 0 {
		return nil, false, nil
	}
	last := sr.Decisions[len(sr.Decisions)-1]
	if last.Decision != decision || last.Note != note || last.By != by {
		return nil, false, nil
	}
	env, err := resumeEvent(key, sr, last.NodeID, last.Seq-1, decision, note, by) // Seq counts the resume itself
	if err != nil {
		return nil, false, err
	}
	_, applied, same, err := s.P.Store.AppliedAt(treesearch.Name, &env)
	if err != nil || !applied || !same {
		return nil, false, err
	}
	return map[string]any{"id": env.ID, "search_id": sr.ID, "scope": sr.Scope, "node_id": last.NodeID, "decision": decision, "driver": resumeDriver(sr)}, true, nil
}

// loadSearch resolves id in the scopes allow admits (entityKey) and reads
// the search; ok is false when it answered the request already (an
// ambiguous or unknown id: 409 or 404; a store error: 500).
func (s *Server) loadSearch(w http.ResponseWriter, r *http.Request, id string, allow func(string) bool) (string, treesearch.Search, bool) {
	key, ok := entityKey(w, r, "search", id, treesearch.Scopes, s.P.Store, allow, nil)
	if !ok {
		return "", treesearch.Search{}, false
	}
	sr, ok, err := treesearch.Get(s.P.Store, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return "", sr, false
	case !ok:
		entityNotFound(w, r, "search", id)
		return "", sr, false
	}
	return key, sr, true
}
