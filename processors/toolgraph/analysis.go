package toolgraph

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/community"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/simple"
)

// Graph-algorithm constants.
const (
	// Damping is the PageRank damping factor (the usual 0.85).
	Damping = 0.85
	// PageRankTolerance ends the power iteration once the 2-norm of the
	// change of the rank vector falls below it (gonum's criterion).
	PageRankTolerance = 1e-10
	// PageRankMaxIterations bounds the power iteration.
	PageRankMaxIterations = 1000
	// LouvainResolution is the modularity resolution γ given to gonum's
	// community.Modularize (1 = standard modularity).
	LouvainResolution = 1.0
	// LouvainSeed seeds the PCG source given to community.Modularize, so
	// the same graph always yields the same communities.
	LouvainSeed = 0x70_01_67_a9
)

// params are the tunable choices of scoring. defaultParams are the
// documented ones; the struct exists so that the tests can check the
// ablations the package documentation reports.
type params struct {
	k            float64 // confidence smoothing (Smoothing)
	recency      recencyMode
	prior        priorMode
	useCommunity bool            // false: community boost always 0 (ablation only)
	noTiers      bool            // true: rank by score alone (ablation only)
	design       bool            // true: rank by the design score (the ranking before the context levels; ablation only)
	minObs       int             // ContextMinObservations
	without      map[string]bool // context levels left out (the level choice's variants)
	gateZ        float64         // TopGateZ; negative: no gate (the level choice's variants)
	wordsLambda  float64         // WordsLambda
	wordMinObs   int             // WordMinObservations
	wordsBigram  bool            // true: the words mix with the levels from bigram down only (the words choice's variants)
	wordsGate    bool            // true: the first-place gate applies with words too (the words choice's variants)
	wordsPrior   float64         // β: a word's shares shrunk towards the context model, (c(prev,w,t) + β·P_model) / (c(prev,w,·) + β); 0 shipped (the weighting choice's variants)
	wordsWeight  wordWeight      // how the words' shares are averaged; wordsEqual shipped (the weighting choice's variants)
	wordsGamma   float64         // γ of wordsByCount and wordsByPeak
}

// wordWeight is how mixWords averages the words' shares (the weighting
// choice's variants, TestWordsWeightingChoice).
type wordWeight int

const (
	wordsEqual   wordWeight = iota // each word weighs 1 (shipped)
	wordsByCount                   // c(prev, w, ·)^γ: γ < 0 favours rare words
	wordsByPeak                    // (the word's largest share)^γ: peaked words weigh more
)

type recencyMode int

const (
	recencySpan recencyMode = iota // RecencyBoost
	recencyNone                    // ablation: no recency term
	recencyRank                    // ablation: 1 − (#successors seen later)/(out-degree)
)

type priorMode int

const (
	priorFrequency priorMode = iota // start share without context, call share with a rare context tool
	priorPageRank                   // ablation: normalised PageRank
)

var defaultParams = params{k: Smoothing, recency: recencySpan, prior: priorFrequency, useCommunity: true, minObs: ContextMinObservations, gateZ: TopGateZ,
	wordsLambda: WordsLambda, wordMinObs: WordMinObservations}

// analysisCache holds the derived structure of a Graph, computed on first
// use after a change.
type analysisCache struct {
	mu sync.Mutex
	a  *analysis
	p  *params // nil: defaultParams
}

func (c *analysisCache) invalidate() {
	c.mu.Lock()
	c.a = nil
	c.mu.Unlock()
}

// arc is a successor edge of a node.
type arc struct {
	to     int32
	count  int
	conf   float64
	weight float64
	rec    float64
	last   int64 // last observation, Unix ms
}

// analysis is everything the algorithms need, with nodes numbered in
// sorted tool-name order.
type analysis struct {
	p     params
	tools []string
	idx   map[string]int32
	calls []int
	start []int
	out   []int // count(tool→·)
	succ  [][]arc
	pred  [][]int32 // distinct predecessors, sorted, self excluded
	selfs []bool    // has a self-loop

	totalCalls, totalStarts int

	pr     []float64
	prNorm []float64 // pr / max pr
	comm   []int
	ncomm  int

	byPR     []int32   // all nodes by decreasing PageRank, then name
	commByPR [][]int32 // members of each community, same order
	byCalls  []int32   // by decreasing calls, then name
	byStarts []int32   // by decreasing starts, then calls, then name

	ng ngram      // the context levels' counts (contextRow sums)
	wc wordCounts // the words' counts (wordRow sums)
}

// analysis returns the derived structure, computing it if needed.
func (g *Graph) analysis() *analysis {
	g.an.mu.Lock()
	defer g.an.mu.Unlock()
	if g.an.a == nil {
		p := defaultParams
		if g.an.p != nil {
			p = *g.an.p
		}
		g.an.a = analyze(g, p)
	}
	return g.an.a
}

// setParams replaces the scoring parameters (evaluation ablations).
func (g *Graph) setParams(p params) {
	g.an.mu.Lock()
	g.an.p, g.an.a = &p, nil
	g.an.mu.Unlock()
}

// analyze computes the structure, PageRank, communities and orders of g.
func analyze(g *Graph, p params) *analysis {
	a := structure(g, p)
	n := len(a.tools)
	a.pr = a.pageRank()
	a.prNorm = make([]float64, n)
	maxPR := 0.0
	for _, r := range a.pr {
		maxPR = max(maxPR, r)
	}
	for i, r := range a.pr {
		if maxPR > 0 {
			a.prNorm[i] = r / maxPR
		}
	}
	a.comm, a.ncomm = a.louvain()

	a.byPR = orderBy(n, func(i, j int32) bool {
		if a.pr[i] != a.pr[j] {
			return a.pr[i] > a.pr[j]
		}
		return i < j
	})
	a.commByPR = make([][]int32, a.ncomm)
	for _, v := range a.byPR {
		a.commByPR[a.comm[v]] = append(a.commByPR[a.comm[v]], v)
	}
	a.byCalls = orderBy(n, func(i, j int32) bool {
		if a.calls[i] != a.calls[j] {
			return a.calls[i] > a.calls[j]
		}
		return i < j
	})
	a.byStarts = orderBy(n, func(i, j int32) bool {
		if a.start[i] != a.start[j] {
			return a.start[i] > a.start[j]
		}
		if a.calls[i] != a.calls[j] {
			return a.calls[i] > a.calls[j]
		}
		return i < j
	})
	return a
}

// structure numbers the tools in sorted order and builds the adjacency
// with confidences, weights and recency.
func structure(g *Graph, p params) *analysis {
	a := &analysis{p: p, idx: make(map[string]int32, len(g.nodes))}
	a.tools = make([]string, 0, len(g.nodes))
	for t := range g.nodes {
		a.tools = append(a.tools, t)
	}
	sort.Strings(a.tools)
	n := len(a.tools)
	for i, t := range a.tools {
		a.idx[t] = int32(i)
	}
	a.calls, a.start, a.out = make([]int, n), make([]int, n), make([]int, n)
	for i, t := range a.tools {
		r := g.nodes[t]
		a.calls[i], a.start[i], a.out[i] = r.Calls, r.Starts, r.Out
		a.totalCalls += r.Calls
		a.totalStarts += r.Starts
	}
	a.succ = make([][]arc, n)
	a.selfs = make([]bool, n)
	for _, e := range g.edges {
		u, okU := a.idx[e.From]
		v, okV := a.idx[e.To]
		if !okU || !okV { // cannot happen with rows written by learn
			continue
		}
		c := confidenceK(e.Count-e.Failed, a.out[u], p.k) // failed calls lower it
		a.succ[u] = append(a.succ[u], arc{to: v, count: e.Count, conf: c,
			weight: EdgeWeight(EdgeSequence, SourceObserved, c), last: e.LastSeenMS})
		if u == v {
			a.selfs[u] = true
		}
	}
	a.pred = make([][]int32, n)
	for u := range a.succ {
		s := a.succ[u]
		sort.Slice(s, func(i, j int) bool { return s[i].to < s[j].to })
		setRecency(s, p.recency)
		for _, e := range s {
			if int(e.to) != u {
				a.pred[e.to] = append(a.pred[e.to], int32(u))
			}
		}
	}
	// pred lists are built in increasing u, hence sorted.
	a.ng = buildNgram(g, a)
	a.wc = buildWordCounts(g, a.idx)
	return a
}

func orderBy(n int, less func(i, j int32) bool) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func confidenceK(count, sourceObservations int, k float64) float64 {
	if count <= 0 {
		return 0
	}
	return float64(count) / (float64(sourceObservations) + k)
}

// setRecency fills arc.rec for the successors of one node (see
// RecencyBoost).
func setRecency(s []arc, mode recencyMode) {
	lasts := make([]int64, len(s))
	for i, e := range s {
		lasts[i] = e.last
	}
	for i := range s {
		switch mode {
		case recencyNone:
		case recencyRank:
			later := 0
			for _, t := range lasts {
				if t > s[i].last {
					later++
				}
			}
			s[i].rec = 1 - float64(later)/float64(len(s))
		default:
			s[i].rec = RecencyBoost(s[i].last, lasts)
		}
	}
}

// RecencyBoost is the recency term of Next for a successor B of the
// context tool A: where B's last observation after A falls between the
// oldest and the newest last observation of A's successors,
// (last(A→B) − min) / (max − min) over successorsLastSeenMS (the last-seen
// event times of all of A's successors, B included, Unix ms); 1 when they
// are all equal (a single successor included); 0 without successors. The
// successor seen most recently gets 1, the one not seen for the longest
// gets 0, and successors seen at about the same time get about the same
// boost, whatever their number. It uses the largest event time per edge,
// which does not depend on the order in which partitions are consumed
// (a counter of transitions would). The leave-one-task-out evaluation
// compared it with a rank normalisation (1 − share of successors seen
// later), which spreads successors seen seconds apart as far as ones seen
// days apart: top-3 0.760 against 0.741 (no recency term: 0.750).
func RecencyBoost(lastSeenMS int64, successorsLastSeenMS []int64) float64 {
	if len(successorsLastSeenMS) == 0 {
		return 0
	}
	lo, hi := successorsLastSeenMS[0], successorsLastSeenMS[0]
	for _, t := range successorsLastSeenMS {
		lo, hi = min(lo, t), max(hi, t)
	}
	if hi == lo {
		return 1
	}
	return float64(lastSeenMS-lo) / float64(hi-lo)
}

// pageRank is weighted PageRank by power iteration over the sequence
// edges (self-loops excluded), in the formulation of gonum's
// network.PageRankSparse for a graph.WeightedDirected: from node j, damping
// × w(j→i)/Σ_i w(j→i) flows to i; a node without out-edges spreads damping
// × its rank uniformly; 1 − damping is spread uniformly. Unlike gonum's,
// which starts from a vector drawn from the unseeded global math/rand
// source (so its last digits differ from call to call), the iteration
// starts from the uniform vector and runs in node-id order: the result is
// a pure function of the graph. The ranks sum to 1.
func (a *analysis) pageRank() []float64 {
	n := len(a.tools)
	if n == 0 {
		return nil
	}
	z := make([]float64, n)
	for u, s := range a.succ {
		for _, e := range s {
			if int(e.to) != u {
				z[u] += e.weight
			}
		}
	}
	cur, next := make([]float64, n), make([]float64, n)
	for i := range cur {
		cur[i] = 1 / float64(n)
	}
	for it := 0; it < PageRankMaxIterations; it++ {
		dangling, total := 0.0, 0.0
		for i := range next {
			next[i] = 0
		}
		for u, s := range a.succ {
			total += cur[u]
			if z[u] == 0 {
				dangling += cur[u]
				continue
			}
			f := Damping * cur[u] / z[u]
			for _, e := range s {
				if int(e.to) != u {
					next[e.to] += f * e.weight
				}
			}
		}
		add := Damping*dangling/float64(n) + (1-Damping)*total/float64(n)
		diff := 0.0
		for i := range next {
			next[i] += add
			d := next[i] - cur[i]
			diff += d * d
		}
		cur, next = next, cur
		if math.Sqrt(diff) < PageRankTolerance {
			break
		}
	}
	return cur
}

// louvain runs gonum's community.Modularize (Louvain, directed modularity)
// on the weighted sequence graph with self-loops excluded, with a
// PCG source seeded with LouvainSeed, and numbers the communities in the
// order of their first node (alphabetically first tool).
func (a *analysis) louvain() ([]int, int) {
	n := len(a.tools)
	comm := make([]int, n)
	if n == 0 {
		return comm, 0
	}
	// modularity divides by the total edge weight: with none (every
	// observed transition failed, or only self-loops) gonum's Louvain
	// computes NaN gains and indexes community -1, so every tool is its own
	// community instead
	total := 0.0
	gv := gview{a: a}
	for u := range n {
		for _, e := range a.succ[u] {
			if int(e.to) != u {
				if w, _ := gv.Weight(int64(u), int64(e.to)); w > 0 && !math.IsInf(w, 0) {
					total += w
				}
			}
		}
	}
	if total == 0 {
		for i := range comm {
			comm[i] = i
		}
		return comm, n
	}
	red := community.Modularize(gv, LouvainResolution, rand.NewPCG(LouvainSeed, LouvainSeed))
	groups := red.Communities()
	firsts := make([][]int32, 0, len(groups))
	for _, grp := range groups {
		ids := make([]int32, len(grp))
		for i, nd := range grp {
			ids[i] = int32(nd.ID())
		}
		slices.Sort(ids)
		if len(ids) > 0 {
			firsts = append(firsts, ids)
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i][0] < firsts[j][0] })
	for c, ids := range firsts {
		for _, v := range ids {
			comm[v] = c
		}
	}
	return comm, len(firsts)
}

// succIndex returns the position of v in a.succ[u], or -1.
func (a *analysis) succIndex(u, v int32) int {
	s := a.succ[u]
	i := sort.Search(len(s), func(i int) bool { return s[i].to >= v })
	if i < len(s) && s[i].to == v {
		return i
	}
	return -1
}

// gview is the analysis as a gonum graph.WeightedDirected over the sequence
// edges without self-loops, with node ids = sorted tool-name positions and
// every node iterator in increasing id order (so gonum's algorithms see
// the same order on every run). Weights are edge weights, or, when cost is
// set, the path cost −ln(weight) (see Graph.Path).
type gview struct {
	a    *analysis
	cost bool
}

var _ graph.WeightedDirected = gview{}

func (g gview) has(id int64) bool { return id >= 0 && id < int64(len(g.a.tools)) }

// Node implements graph.Graph.
func (g gview) Node(id int64) graph.Node {
	if !g.has(id) {
		return nil
	}
	return simple.Node(id)
}

// Nodes implements graph.Graph.
func (g gview) Nodes() graph.Nodes {
	ns := make([]graph.Node, len(g.a.tools))
	for i := range ns {
		ns[i] = simple.Node(i)
	}
	return iterator.NewOrderedNodes(ns)
}

// From implements graph.Graph.
func (g gview) From(id int64) graph.Nodes {
	if !g.has(id) {
		return graph.Empty
	}
	var ns []graph.Node
	for _, e := range g.a.succ[id] {
		if int64(e.to) != id {
			ns = append(ns, simple.Node(e.to))
		}
	}
	if len(ns) == 0 {
		return graph.Empty
	}
	return iterator.NewOrderedNodes(ns)
}

// To implements graph.Directed.
func (g gview) To(id int64) graph.Nodes {
	if !g.has(id) || len(g.a.pred[id]) == 0 {
		return graph.Empty
	}
	ns := make([]graph.Node, len(g.a.pred[id]))
	for i, v := range g.a.pred[id] {
		ns[i] = simple.Node(v)
	}
	return iterator.NewOrderedNodes(ns)
}

// HasEdgeBetween implements graph.Graph.
func (g gview) HasEdgeBetween(x, y int64) bool { return g.HasEdgeFromTo(x, y) || g.HasEdgeFromTo(y, x) }

// HasEdgeFromTo implements graph.Directed.
func (g gview) HasEdgeFromTo(u, v int64) bool {
	return u != v && g.has(u) && g.has(v) && g.a.succIndex(int32(u), int32(v)) >= 0
}

// Edge implements graph.Graph.
func (g gview) Edge(u, v int64) graph.Edge {
	e := g.WeightedEdge(u, v)
	if e == nil {
		return nil
	}
	return e
}

// WeightedEdge implements graph.Weighted.
func (g gview) WeightedEdge(u, v int64) graph.WeightedEdge {
	if !g.HasEdgeFromTo(u, v) {
		return nil
	}
	w, _ := g.Weight(u, v)
	return simple.WeightedEdge{F: simple.Node(u), T: simple.Node(v), W: w}
}

// Weight implements graph.Weighted: (0, true) for x == y (no self-loops in
// this view), (0, false) for an absent edge.
func (g gview) Weight(x, y int64) (float64, bool) {
	if x == y && g.has(x) {
		return 0, true
	}
	if !g.HasEdgeFromTo(x, y) {
		return 0, false
	}
	w := g.a.succ[x][g.a.succIndex(int32(x), int32(y))].weight
	if g.cost {
		return -math.Log(w), true
	}
	return w, true
}
