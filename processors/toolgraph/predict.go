package toolgraph

import "sort"

// Weights of the next-step score (GraphRAG design):
//
//	score = 0.6·confidence + 0.3·community + 0.1·recency + 0.1·pagerank
//
// They sum to 1.1, so scores lie in [0, 1.1].
const (
	WeightConfidence = 0.6
	WeightCommunity  = 0.3
	WeightRecency    = 0.1
	WeightPageRank   = 0.1
)

// Bases of a Prediction.
const (
	// BasisGraph: the design score with the last context tool.
	BasisGraph = "graph"
	// BasisStartPrior: no context; the prior is the share of workflows
	// that began with the tool (ties by call frequency, then name).
	BasisStartPrior = "prior_start"
	// BasisFrequencyPrior: the context tool was followed by a call fewer
	// than MinObservations times (or is unknown); the prior is the tool's
	// share of all calls (ties by name).
	BasisFrequencyPrior = "prior_frequency"
)

// Evidence tiers of a Suggestion under BasisGraph.
const (
	// TierObserved: the tool followed the context tool at least
	// MinObservations times.
	TierObserved = 1
	// TierRare: the tool followed the context tool, fewer times.
	TierRare = 2
	// TierUnobserved: the tool never followed the context tool.
	TierUnobserved = 3
)

// Suggestion is one candidate next tool with its score and the score's
// components. Under BasisGraph,
//
//	Score = 0.6·Confidence + 0.3·Community + 0.1·Recency + 0.1·PageRank
//
// (GraphRAG design); under a prior basis Score = Prior and the other
// components are 0.
type Suggestion struct {
	// Tool is the candidate tool id.
	Tool string `json:"tool"`
	// Score is the ranking score within the suggestion's tier.
	Score float64 `json:"score"`
	// Tier is TierObserved, TierRare or TierUnobserved under BasisGraph,
	// 0 (absent) under a prior basis.
	Tier int `json:"tier,omitempty"`
	// Count is count(A→Tool), A the context tool.
	Count int `json:"observed_count"`
	// Confidence is Confidence(count(A→Tool), count(A→·)), in [0, 1).
	Confidence float64 `json:"confidence"`
	// Community is 1 when Tool is in A's Louvain community, else 0.
	Community float64 `json:"community_boost"`
	// Recency is the RecencyBoost of A→Tool, in [0, 1]; 0 if never observed.
	Recency float64 `json:"recency_boost"`
	// PageRank is Tool's PageRank divided by the largest PageRank, in [0, 1].
	PageRank float64 `json:"pagerank"`
	// Prior is the prior share under BasisStartPrior or BasisFrequencyPrior.
	Prior float64 `json:"prior"`
}

// Prediction is the answer of Next.
type Prediction struct {
	// After is the context as given, oldest first.
	After []string `json:"after"`
	// ContextTool is the last tool of After ("" without context).
	ContextTool string `json:"context_tool,omitempty"`
	// Basis is BasisGraph, BasisStartPrior or BasisFrequencyPrior.
	Basis string `json:"basis"`
	// Observations is count(ContextTool→·) in the graph.
	Observations int `json:"observations"`
	// Suggestions are the top k, best first.
	Suggestions []Suggestion `json:"suggestions"`
}

// Next predicts the tool called after the tools in after (oldest first)
// and returns the k best candidates, best first (fewer when the graph has
// fewer tools; none when k < 1). It is a pure function of the Graph.
//
// Context: only the last element of after, the context tool A, is used.
// The tools before it do nothing: a second-order bonus (count(p,A→X) /
// (count(p,A→·) + 1) for the tool p before A, weights 0.1 to 1.0) moved
// top-3 accuracy by −0.3 to +0.4 points and top-1 by 0 to −0.6 points in
// the evaluation, not worth a projection row per tool triple.
//
// When A was followed by a call at least MinObservations times, every tool
// is scored with the GraphRAG design formula (see Suggestion) and ranked
// by evidence tier first (TierObserved, TierRare, TierUnobserved), then by
// score, then by name. The tiers apply the design's evidence floor to
// candidates as the design applies it to the context tool: without them
// the fixed community boost (+0.3) lifts tools seen once after A, or never,
// above well-established successors in another community (evaluation:
// top-3 0.701 without tiers, 0.760 with them).
//
// Otherwise Next falls back to a prior:
//   - no context (the first call of a workflow): the share of workflows
//     that started with the tool, because what a workflow does first is a
//     different distribution from what it does overall (tau-bench sessions
//     start with get_user_details or get_reservation_details);
//   - a context tool followed by fewer than MinObservations calls: the
//     tool's share of all calls, the maximum-likelihood estimate of "some
//     next call" when nothing is known about A. PageRank was the other
//     candidate, but its teleportation spreads 15% of the mass uniformly
//     over rare tools and it ignores repeated calls; as the prior it cut
//     top-3 accuracy from 0.760 to 0.608 in the evaluation.
func (g *Graph) Next(after []string, k int) Prediction {
	a := g.analysis()
	pred := Prediction{After: append([]string{}, after...), Suggestions: []Suggestion{}, Basis: BasisStartPrior}
	if len(after) > 0 {
		pred.ContextTool = after[len(after)-1]
		pred.Basis = BasisFrequencyPrior
		if ctx, ok := a.idx[pred.ContextTool]; ok {
			pred.Observations = a.out[ctx]
			if pred.Observations >= MinObservations {
				pred.Basis = BasisGraph
			}
		}
	}
	if k < 1 || len(a.tools) == 0 {
		return pred
	}
	if pred.Basis == BasisGraph {
		pred.Suggestions = a.graphTop(a.idx[pred.ContextTool], k)
	} else {
		pred.Suggestions = a.priorTop(pred.Basis, k)
	}
	return pred
}

// priorTop returns the k best tools under a prior basis.
func (a *analysis) priorTop(basis string, k int) []Suggestion {
	var order []int32
	var share func(v int32) float64
	switch {
	case a.p.prior == priorPageRank:
		order = a.byPR
		share = func(v int32) float64 { return a.prNorm[v] }
	case basis == BasisStartPrior && a.totalStarts > 0:
		order = a.byStarts
		share = func(v int32) float64 { return float64(a.start[v]) / float64(a.totalStarts) }
	default:
		order = a.byCalls
		share = func(v int32) float64 { return float64(a.calls[v]) / float64(max(a.totalCalls, 1)) }
	}
	out := make([]Suggestion, 0, min(k, len(order)))
	for _, v := range order[:min(k, len(order))] {
		s := share(v)
		out = append(out, Suggestion{Tool: a.tools[v], Score: s, Prior: s})
	}
	return out
}

// score computes the graph-basis suggestion of candidate v after ctx.
func (a *analysis) score(ctx, v int32) Suggestion {
	s := Suggestion{Tool: a.tools[v], PageRank: a.prNorm[v], Tier: TierUnobserved}
	if i := a.succIndex(ctx, v); i >= 0 {
		e := a.succ[ctx][i]
		s.Count, s.Confidence, s.Recency = e.count, e.conf, e.rec
		s.Tier = TierRare
		if e.count >= MinObservations {
			s.Tier = TierObserved
		}
	}
	if a.p.useCommunity && a.comm[v] == a.comm[ctx] {
		s.Community = 1
	}
	s.Score = Score(s.Confidence, s.Community, s.Recency, s.PageRank)
	return s
}

// Score is the GraphRAG design's next-step score of a candidate:
// 0.6·confidence + 0.3·community + 0.1·recency + 0.1·pagerank, with
// community 0 or 1 and the other inputs in [0, 1] (pagerank normalised by
// the largest PageRank).
func Score(confidence, community, recency, pagerank float64) float64 {
	return WeightConfidence*confidence + WeightCommunity*community + WeightRecency*recency + WeightPageRank*pagerank
}

// graphTop returns the k best suggestions after ctx. Successors of ctx are
// all scored. A tool that never followed ctx is in the last tier with
// score 0.3·community + 0.1·pagerank, so among those only the k of highest
// PageRank inside ctx's community and the k of highest PageRank overall
// can reach the top k: the result is the exact top k over all tools while
// scoring O(out-degree + k) candidates.
func (a *analysis) graphTop(ctx int32, k int) []Suggestion {
	cand := make(map[int32]bool, len(a.succ[ctx])+2*k)
	for _, e := range a.succ[ctx] {
		cand[e.to] = true
	}
	addTop := func(order []int32) {
		added := 0
		for _, v := range order {
			if added == k {
				return
			}
			if !cand[v] {
				cand[v] = true
				added++
			}
		}
	}
	if a.p.useCommunity {
		addTop(a.commByPR[a.comm[ctx]])
	}
	addTop(a.byPR)
	out := make([]Suggestion, 0, len(cand))
	for v := range cand {
		out = append(out, a.score(ctx, v))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tier != out[j].Tier && !a.p.noTiers {
			return out[i].Tier < out[j].Tier
		}
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Tool < out[j].Tool
	})
	return out[:min(k, len(out))]
}
