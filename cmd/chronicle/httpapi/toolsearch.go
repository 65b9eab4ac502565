package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

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
// The answer adds alpha and each hit's semantic and graph parts.
func (s *Server) hybridTools(w http.ResponseWriter, r *http.Request, q search.Query, ctxTools []string) {
	g, err := s.toolGraph()
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
		writeErr(w, http.StatusBadRequest, "context_tools[%d]: %q is not a tool of the catalogue or the tool graph", i, ctxTools[i])
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

// contextTools parses context_tools=a,b.
func contextTools(r *http.Request) []string {
	var out []string
	for _, t := range strings.Split(r.URL.Query().Get("context_tools"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
