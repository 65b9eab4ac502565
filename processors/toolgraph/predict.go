package toolgraph

import (
	"slices"
	"sort"
)

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

// Suggestion is one candidate next tool with its Probability (the
// ranking) and the design score with its components. Under BasisGraph,
//
//	Score = 0.6·Confidence + 0.3·Community + 0.1·Recency + 0.1·PageRank
//
// (GraphRAG design); under a prior basis Score = Prior and the other
// components are 0.
type Suggestion struct {
	// Tool is the candidate tool id.
	Tool string `json:"tool"`
	// Score is the design score (graph basis) or the prior share (prior
	// basis); with Tier it breaks ties of Probability.
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
	// Probability is the context model's estimate of P(next = Tool | the
	// calls so far), in (0, 1]; under LevelWords (NextAfterMessage) the
	// words' estimate, in [0, 1] (0: none of the words preceded the tool).
	// Suggestions are ranked by it, except the first when
	// Prediction.BigramFirst (see NextCalls).
	Probability float64 `json:"probability"`
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
	// Levels are the context levels the probabilities were interpolated
	// from, most specific first (LevelTrigramOutcome … LevelUnigram).
	Levels []string `json:"levels"`
	// BigramFirst: the first suggestion is the bigram level's first tool,
	// moved there by the TopGateZ gate because the most specific level's
	// evidence for the model's first was too thin; the others are ranked
	// by Probability.
	BigramFirst bool `json:"bigram_first,omitempty"`
	// Words are the words of the user's message (NextAfterMessage) that
	// were mixed into the probabilities: those that had followed
	// ContextTool (or a workflow's start) at least WordMinObservations
	// times, in the message's order. Absent without a message or such a
	// word.
	Words []string `json:"words,omitempty"`
	// UnknownTools are the tools of After the graph has never seen, in
	// order, each once (tool names are case-sensitive): a context of them
	// is predicted from the priors. Before, a misspelled or wrongly cased
	// name ("search" for "Search") silently gave prior predictions (found
	// by a new user's walkthrough).
	UnknownTools []string `json:"unknown_tools,omitempty"`
	// Suggestions are the top k, best first.
	Suggestions []Suggestion `json:"suggestions"`
}

// Next predicts the tool called after the tools in after (oldest first),
// the outcomes of those calls unknown, and returns the k best candidates,
// best first (fewer when the graph has fewer tools; none when k < 1). It
// is NextCalls without the outcome levels; a pure function of the Graph.
func (g *Graph) Next(after []string, k int) Prediction {
	calls := make([]Call, len(after))
	for i, t := range after {
		calls[i] = Call{Tool: t}
	}
	return g.predict(calls, false, nil, k)
}

// NextCalls predicts the tool called after the calls in after (oldest
// first, each with its outcome) and returns the k best candidates, best
// first. It is the predictor of GET /v1/graph/next (with failed=) and of
// the evaluation; a pure function of the Graph.
//
// Ranking: by Probability, an interpolated Witten-Bell estimate of
// P(next = tool | context) over the context levels (see probabilities),
// most specific first:
//
//	trigram_outcome  the last two calls with their outcomes     (x/ rows)
//	trigram          the last two tools                         (x/ rows, summed)
//	bigram_outcome   the last tool with its outcome             (x/ rows, summed)
//	bigram           the last tool (edge counts), or, for a
//	                 first call, the workflows' first calls      (e/ rows; n/ starts)
//	unigram          every call                                  (n/ calls)
//
// A level whose context was followed by fewer than
// ContextMinObservations calls is left out (the design's evidence floor,
// applied per level). The bigram level alone ranks as the bigram
// baseline does, so the higher levels are what the model adds; the
// outcome levels matter where a failed call is retried (a ReAct agent's
// Search after a failed Search: HotPotQA top-1 0.706 → 0.85). The design
// score (tier, then Score) only breaks ties of Probability, then the tool
// name: ranked by it, as before, the graph was below the bigram baseline
// on HotPotQA (see the package documentation). Then the first place is
// gated (TopGateZ): the bigram level's first tool takes it unless the
// most specific level's counts prefer the model's first by a sign test
// (BigramFirst says it did).
//
// The design fields of each suggestion are kept as they were: under
// BasisGraph (the last tool followed by at least MinObservations calls)
// the GraphRAG design score with its components and evidence tier; under
// a prior basis (no context: BasisStartPrior; a rare or unknown last
// tool: BasisFrequencyPrior) Score = Prior, the share of workflows that
// started with the tool or the tool's share of all calls. Hybrid search
// and workflow suggestions use those scores as their graph term.
func (g *Graph) NextCalls(after []Call, k int) Prediction {
	return g.predict(after, true, nil, k)
}

// NextAfterMessage is NextCalls (outcomes true) or Next (false) told
// what the user said last before the call: message's Words that followed
// the last tool of after (or a workflow's start, for an empty after) at
// least WordMinObservations times are mixed into each candidate's
// Probability,
//
//	P(t) = WordsLambda·P_model(t) + (1 − WordsLambda)·mean_w c(prev, w, t) / c(prev, w, ·)
//
// (see LevelWords; WordsLambda is 0, so the words rank alone and the
// design ranking breaks their ties; the first-place gate does not apply
// then: its evidence test is about the call history's levels).
// Prediction.Words lists the words used and Levels starts with
// LevelWords; without such a word it is NextCalls' or Next's answer. On
// the tau-bench leave-one-task-out evaluation (Accuracy.MessageTop1),
// top-1 on the report half rose from 0.559 (NextCalls) to 0.615, against
// the bigram baseline's 0.525. A pure function of the Graph.
func (g *Graph) NextAfterMessage(after []Call, outcomes bool, message string, k int) Prediction {
	return g.predict(after, outcomes, Words(message), k)
}

// predict is Next (outcomes false), NextCalls (outcomes true) and, with
// words, NextAfterMessage.
func (g *Graph) predict(after []Call, outcomes bool, words []string, k int) Prediction {
	a := g.analysis()
	pred := Prediction{After: make([]string, len(after)), Suggestions: []Suggestion{}, Basis: BasisStartPrior, Levels: []string{}}
	for i, c := range after {
		pred.After[i] = c.Tool
		if _, ok := a.idx[c.Tool]; !ok && !slices.Contains(pred.UnknownTools, c.Tool) {
			pred.UnknownTools = append(pred.UnknownTools, c.Tool)
		}
	}
	if len(after) > 0 {
		pred.ContextTool = after[len(after)-1].Tool
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
	if a.p.design {
		if pred.Basis == BasisGraph {
			pred.Suggestions = a.graphTop(a.idx[pred.ContextTool], k)
		} else {
			pred.Suggestions = a.priorTop(pred.Basis, k)
		}
		return pred
	}
	names, levels := a.levelCounts(after, outcomes)
	used, wls := a.wordLevel(after, words)
	if len(used) > 0 {
		pred.Words = used
		pred.Levels = append(pred.Levels, LevelWords)
		if a.p.wordsBigram {
			for i, n := range names {
				if n == LevelBigram || n == LevelUnigram {
					names, levels = names[i:], levels[i:]
					break
				}
			}
		}
	}
	pred.Levels = append(pred.Levels, names...)
	cand := a.candidates(append(wls[:len(wls):len(wls)], levels...), k)
	out := make([]Suggestion, len(cand))
	share := a.priorShare(pred.Basis)
	for i, v := range cand {
		if pred.Basis == BasisGraph {
			out[i] = a.score(a.idx[pred.ContextTool], v)
		} else {
			sh := share(v)
			out[i] = Suggestion{Tool: a.tools[v], Score: sh, Prior: sh}
		}
		out[i].Probability = a.p.mixWords(probability(v, len(a.tools), levels), v, wls)
	}
	ranked := rankByProbability(out, len(out), !a.p.noTiers)
	if len(used) == 0 || a.p.wordsGate {
		pred.BigramFirst = a.gateTop(ranked, cand, names, levels)
	}
	pred.Suggestions = ranked[:min(k, len(ranked))]
	return pred
}

// priorTop returns the k best tools under a prior basis.
func (a *analysis) priorTop(basis string, k int) []Suggestion {
	order, share := a.prior(basis)
	out := make([]Suggestion, 0, min(k, len(order)))
	for _, v := range order[:min(k, len(order))] {
		s := share(v)
		out = append(out, Suggestion{Tool: a.tools[v], Score: s, Prior: s})
	}
	return out
}

// priorShare is the share of each tool under a prior basis.
func (a *analysis) priorShare(basis string) func(v int32) float64 {
	_, share := a.prior(basis)
	return share
}

// prior is the order and share of the tools under a prior basis.
func (a *analysis) prior(basis string) ([]int32, func(v int32) float64) {
	switch {
	case a.p.prior == priorPageRank:
		return a.byPR, func(v int32) float64 { return a.prNorm[v] }
	case basis == BasisStartPrior && a.totalStarts > 0:
		return a.byStarts, func(v int32) float64 { return float64(a.start[v]) / float64(a.totalStarts) }
	default:
		return a.byCalls, func(v int32) float64 { return float64(a.calls[v]) / float64(max(a.totalCalls, 1)) }
	}
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
