// Package toolsearch holds the hybrid tool search of the PML design, the
// re-ranking behind GET /v1/tools/search?context_tools=…: one function
// (Search) that the HTTP route and the leave-one-task-out evaluation both
// call, so the figures `chronicle eval` reports are those of the route's
// code. Its inputs are plain data — the semantic candidates (tool id and
// relevance) and the graph term (α and the graph's next-step score per
// tool) — so it does not depend on how the tool graph is stored.
package toolsearch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
)

// Candidate is a tool returned by the semantic search, with its relevance
// (the search's hybrid vector + BM25 score, in [0, 1]).
type Candidate struct {
	Tool     string
	Semantic float64
}

// GraphTerm is what the hybrid reads of the learned tool graph for one
// context: the local weight Alpha of meaning against the graph and the
// graph's next-step score of each tool after the context (tools absent
// score 0; scores above 1 count as 1).
type GraphTerm struct {
	Alpha  float64
	Scores map[string]float64
}

// GraphTermOf reads the graph term of context tools ctx (oldest first,
// at least one) from g: Alpha is suggest.Alpha of the last context tool
// (1 below toolgraph.MinObservations of it — the cold-start prior is
// meaning alone — else 1 − 0.5 · density of its successors); Scores are
// g.Next(ctx)'s suggestion scores, none when the prediction's basis is a
// prior rather than the graph.
func GraphTermOf(g *toolgraph.Graph, ctx []string) GraphTerm {
	t := GraphTerm{Alpha: 1, Scores: map[string]float64{}}
	if len(ctx) == 0 {
		return t
	}
	t.Alpha = suggest.Alpha(g, ctx[len(ctx)-1])
	if pred := g.Next(ctx, g.NumTools()); pred.Basis == toolgraph.BasisGraph {
		for _, sg := range pred.Suggestions {
			t.Scores[sg.Tool] = sg.Score
		}
	}
	return t
}

// MaxLimit is the most tools a search answers and the most candidates it
// asks the semantic search for (the memory-search tool schema's limit).
const MaxLimit = 20

// DefaultLimit is the number of tools answered when the request names none.
const DefaultLimit = 5

// ErrLimit is wrapped by Search's error for a limit outside 1..MaxLimit.
var ErrLimit = errors.New("toolsearch: bad limit")

// CandidateCount is how many semantic candidates a search of k tools
// re-ranks (PML design, candidate expansion): k · (1.5 + (1 − density) ·
// 1.5), rounded up and capped at MaxLimit, where density = 2 · (1 − α)
// inverts Alpha = 1 − 0.5 · density (so α = 1, an isolated or cold tool,
// expands to 3k and α = 0.5, a dense cluster, to 1.5k).
func CandidateCount(k int, alpha float64) int {
	density := 2 * (1 - alpha)
	return min(MaxLimit, int(math.Ceil(float64(k)*(1.5+(1-density)*1.5))))
}

// Scored is a tool of the answer: Score = α · Semantic + (1 − α) · Graph.
type Scored struct {
	Tool     string  `json:"tool"`
	Score    float64 `json:"score"`
	Semantic float64 `json:"semantic"`
	Graph    float64 `json:"graph"`
}

// Result is a hybrid search's answer: the tools best first (at most the
// limit), the α used, and how many candidates were re-ranked.
type Result struct {
	Tools []Scored
	Alpha float64
	// Candidates is the number of candidates semantic returned and Search
	// re-ranked: at most CandidateCount(k, α), fewer when the collection
	// holds fewer (14 tools for tau-bench airline, where 20 are asked).
	Candidates int
}

// Options change what Search weighs, for measuring the hybrid against its
// parts; the zero value is the route's behaviour.
type Options struct {
	// Alpha, when set, replaces the graph term's α in the score (1:
	// meaning only, 0: the graph only). The candidate count still follows
	// the graph term's α, so every variant re-ranks the same candidates.
	Alpha *float64
}

// Search is the hybrid tool search: it asks semantic for
// CandidateCount(k, term.Alpha) candidates (semantic returns at most that
// many, best first), scores each α · semantic + (1 − α) · min(1, graph),
// sorts by score (stable: ties keep the semantic order) and keeps the
// first k. k = 0 means DefaultLimit; a k outside 1..MaxLimit is an error
// wrapping ErrLimit that names the field "limit". semantic's error is
// returned as is.
func Search(ctx context.Context, k int, term GraphTerm, opt Options, semantic func(ctx context.Context, limit int) ([]Candidate, error)) (Result, error) {
	if k == 0 {
		k = DefaultLimit
	}
	if k < 1 || k > MaxLimit {
		return Result{}, fmt.Errorf("%w: limit: %d is not from 1 to %d", ErrLimit, k, MaxLimit)
	}
	res := Result{Alpha: term.Alpha}
	cands, err := semantic(ctx, CandidateCount(k, term.Alpha))
	if err != nil {
		return Result{}, err
	}
	res.Candidates = len(cands)
	alpha := term.Alpha
	if opt.Alpha != nil {
		alpha = *opt.Alpha
	}
	res.Tools = Rank(cands, term.Scores, alpha)
	if len(res.Tools) > k {
		res.Tools = res.Tools[:k]
	}
	return res, nil
}

// Rank scores candidates by alpha · semantic + (1 − alpha) · min(1,
// graph[tool]) and sorts them best first (stable).
func Rank(cands []Candidate, graph map[string]float64, alpha float64) []Scored {
	out := make([]Scored, len(cands))
	for i, c := range cands {
		g := min(1, graph[c.Tool])
		out[i] = Scored{Tool: c.Tool, Semantic: c.Semantic, Graph: g, Score: alpha*c.Semantic + (1-alpha)*g}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}
