package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/toolsearch"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// hybridTools serves GET /v1/tools/search with context_tools=a,b (the
// tools called so far, oldest first): the PML design's hybrid tool search,
//
//	final = α · semantic + (1 − α) · graph
//
// computed by toolsearch.Search (the function `chronicle eval` measures):
// semantic = the search's relevance, graph = the tool graph's next-step
// score after the context (capped at 1; 0 without enough observations),
// α = suggest.Alpha of the last context tool (toolsearch.GraphTermOf).
// Candidates are expanded before re-ranking (toolsearch.CandidateCount).
// The answer adds alpha and each hit's semantic and graph parts. The graph
// is the union of the tool graphs sel selects, the scope filter's
// (toolScopes).
func (s *Server) hybridTools(w http.ResponseWriter, r *http.Request, q search.Query, sel graphSel, ctxTools []string) {
	g, err := s.toolGraphIn(sel)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	cat, err := dagCatalog()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// a context tool nobody knows is a typo, refused as the suggest route
	// refuses it; before, it was ignored: 200 with alpha 1, the graph part
	// of the ranking quietly off (found by an analyst's walkthrough)
	if i := (&suggest.Suggester{Graph: g, Catalog: cat}).Unknown(ctxTools); i >= 0 {
		reason := fmt.Sprintf("%q is not a tool of the catalogue or the tool graph", ctxTools[i])
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("context_tools[%d]: %s", i, reason), Parameter: "context_tools", Reason: reason})
		return
	}
	var res search.Result
	byID := map[string]search.Hit{}
	out, err := toolsearch.Search(r.Context(), q.Limit, toolsearch.GraphTermOf(g, ctxTools), toolsearch.Options{},
		func(ctx context.Context, limit int) ([]toolsearch.Candidate, error) {
			q.Limit = limit
			var err error
			if res, err = s.P.Search.Search(ctx, q); err != nil {
				return nil, err
			}
			cands := make([]toolsearch.Candidate, len(res.Memories))
			for i, h := range res.Memories {
				cands[i] = toolsearch.Candidate{Tool: h.ID, Semantic: h.Relevance}
				byID[h.ID] = h
			}
			return cands, nil
		})
	switch {
	case errors.Is(err, toolsearch.ErrLimit):
		writeErr(w, http.StatusBadRequest, "%v", strings.TrimPrefix(err.Error(), toolsearch.ErrLimit.Error()+": "))
		return
	case err != nil:
		toolError(w, err)
		return
	}
	type hit struct {
		CollectionHit
		Semantic float64 `json:"semantic"`
		Graph    float64 `json:"graph"`
	}
	hits := make([]hit, len(out.Tools))
	for i, t := range out.Tools {
		h := byID[t.Tool]
		h.Relevance = t.Score
		hits[i] = hit{CollectionHit: CollectionHit{Hit: h, Tags: h.Tags, SourceSessions: h.SourceSessions}, Semantic: t.Semantic, Graph: t.Graph}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": hits, "total_found": res.TotalFound, "tokens_used": res.TokensUsed,
		"alpha": out.Alpha, "context_tools": ctxTools, "candidates": out.Candidates})
}

// toolScopes applies GET /v1/tools/search's scope filter to q. The tool
// graph is kept per scope and the Tool documents are their union (scope
// search.ToolScope), so the filter cannot be the documents' scope, as it
// is for memories and patterns (before, scope=project:<id> and
// scope=project found nothing and scope=org everything, whatever the
// graphs held; found by a new user's walkthrough). Instead a tool matches
// scope=<one scope> when that scope's tool graph has it, scope=<kind>
// (project, team, org) when the graph of a scope of that kind has it, and
// every tool matches without a filter or with scope=all. It returns the
// tool graphs filtered to (everyGraph: no filter), with q's document filter set to
// their tools (search.Query.IDs) and its scope kind cleared; ok is false
// when it wrote an error (500 for a store error).
func (s *Server) toolScopes(w http.ResponseWriter, q *search.Query) (sel graphSel, ok bool) {
	var scopes []string
	switch q.Scope {
	case "", search.ScopeAll:
		q.Scope = ""
		return everyGraph(), true
	case search.ScopeProject, search.ScopeTeam, search.ScopeOrg:
		all, err := toolgraph.Scopes(s.P.Store)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return graphSel{}, false
		}
		for _, sc := range all {
			if strings.HasPrefix(sc, q.Scope+":") {
				scopes = append(scopes, sc)
			}
		}
	default:
		if !events.ValidScope(q.Scope) {
			// the search answers the 400 naming scope; the graph is
			// every scope's meanwhile (the route needs a token that
			// reads *), so a context tool is checked as without a filter
			return everyGraph(), true
		}
		scopes = []string{q.Scope}
	}
	sel = graphsOf(scopes...) // no scope of the kind: no tool
	g, err := s.toolGraphIn(sel)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return graphSel{}, false
	}
	tools := map[string]bool{}
	for _, t := range g.Tools() {
		tools[t.Tool] = true
	}
	q.Scope, q.IDs = "", func(id string) bool { return tools[id] }
	return sel, true
}

// contextTools parses context_tools=a,b; an empty name (a,,b) is a 400
// naming its 0-based position, as GET /v1/graph/next's after= answers
// it. Before, empty names were skipped, so the 400 of an unknown tool
// named the position among the others (context_tools[1] for the x of
// get_user_details,,x: a workflows walkthrough).
func contextTools(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	raw := r.URL.Query().Get("context_tools")
	if strings.TrimSpace(raw) == "" {
		return nil, true
	}
	out := strings.Split(raw, ",")
	for i, t := range out {
		if out[i] = strings.TrimSpace(t); out[i] == "" {
			writeParamErr(w, http.StatusBadRequest, "context_tools", fmt.Sprintf("the tool name at position %d (0-based) of %q is empty", i, raw))
			return nil, false
		}
	}
	return out, true
}
