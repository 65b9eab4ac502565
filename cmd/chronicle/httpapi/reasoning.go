package httpapi

import (
	"net/http"
	"strings"

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
		writeErr(w, http.StatusBadRequest, "%v", err)
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
		entityNotFound(w, "reasoning task", id)
		return
	case suffix == "":
		writeJSON(w, http.StatusOK, t)
		return
	}
	h, err := passes.History(s.P.Store, key)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"task_id": t.ID, "scope": t.Scope, "status": t.Status, "passes": h})
}
