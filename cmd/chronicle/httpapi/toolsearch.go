package httpapi

import (
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// hybridTools serves GET /v1/tools/search with context_tools=a,b (the
// tools called so far, oldest first): the PML design's hybrid tool search,
//
//	final = α · semantic + (1 − α) · graph
//
// semantic = the search's relevance, graph = the tool graph's next-step
// score after the context (capped at 1; 0 without enough observations),
// α = suggest.Alpha (1.0 below 5 observations of the last context tool,
// else 1 − 0.5 · density of its successors). Candidates are expanded
// before re-ranking: k · (1.5 + (1 − density) · 1.5), capped at the
// search's 20. The answer adds alpha and each hit's semantic and graph
// parts.
func (s *Server) hybridTools(w http.ResponseWriter, r *http.Request, q search.Query, ctxTools []string) {
	g, err := s.toolGraph()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	last := ctxTools[len(ctxTools)-1]
	alpha := suggest.Alpha(g, last)
	density := 2 * (1 - alpha)
	k := q.Limit
	if k == 0 {
		k = 5
	}
	if k < 1 || k > 20 {
		writeErr(w, http.StatusBadRequest, "limit: %d is not from 1 to 20", k)
		return
	}
	q.Limit = min(20, int(math.Ceil(float64(k)*(1.5+(1-density)*1.5))))
	res, err := s.P.Search.Search(r.Context(), q)
	if err != nil {
		toolError(w, err)
		return
	}
	graph := map[string]float64{}
	if pred := g.Next(ctxTools, g.NumTools()); pred.Basis == toolgraph.BasisGraph {
		for _, sg := range pred.Suggestions {
			graph[sg.Tool] = min(1, sg.Score)
		}
	}
	type hit struct {
		CollectionHit
		Semantic float64 `json:"semantic"`
		Graph    float64 `json:"graph"`
	}
	hits := make([]hit, len(res.Memories))
	for i, h := range res.Memories {
		hits[i] = hit{CollectionHit: CollectionHit{Hit: h, Tags: h.Tags, SourceSessions: h.SourceSessions}, Semantic: h.Relevance, Graph: graph[h.ID]}
		hits[i].Relevance = alpha*h.Relevance + (1-alpha)*hits[i].Graph
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Relevance > hits[j].Relevance })
	if len(hits) > k {
		hits = hits[:k]
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": hits, "total_found": res.TotalFound, "tokens_used": res.TokensUsed,
		"alpha": alpha, "context_tools": ctxTools, "candidates": q.Limit})
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
