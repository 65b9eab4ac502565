package toolgraph

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"gonum.org/v1/gonum/graph/network"
)

const eps = 1e-8

func near(a, b float64) bool { return math.Abs(a-b) < eps }

func TestEdgeWeights(t *testing.T) {
	cases := []struct {
		typ  EdgeType
		src  EdgeSource
		conf float64
		want float64 // type × source × confidence, by hand
	}{
		{EdgeDependency, SourceObserved, 1, 1.0},
		{EdgeDependency, SourceTemplate, 0.5, 0.25},
		{EdgeContains, SourceInferred, 1, 0.56},
		{EdgeContains, SourceObserved, 0.5, 0.4},
		{EdgeSequence, SourceObserved, 0.8, 0.4},
		{EdgeSequence, SourceInferred, 0.5, 0.175},
		{EdgeSequence, SourceTemplate, 0.6, 0.15},
		{EdgeAlternative, SourceObserved, 0.3, 0.09},
		{EdgeAlternative, SourceTemplate, 1, 0.15},
		{"unknown", SourceObserved, 1, 0},
		{EdgeSequence, "unknown", 1, 0},
	}
	for _, c := range cases {
		if got := EdgeWeight(c.typ, c.src, c.conf); !near(got, c.want) {
			t.Errorf("EdgeWeight(%s, %s, %v) = %v, want %v", c.typ, c.src, c.conf, got, c.want)
		}
	}
}

func TestConfidence(t *testing.T) {
	cases := []struct {
		count, out int
		want       float64
	}{
		{0, 5, 0},
		{1, 1, 0.5},
		{2, 2, 2.0 / 3},
		{3, 3, 0.75},    // first to reach the suggestion threshold 0.7
		{5, 5, 5.0 / 6}, // still below 0.85
		{6, 6, 6.0 / 7}, // first to reach the speculation threshold 0.85
		{5, 10, 5.0 / 11},
	}
	for _, c := range cases {
		if got := Confidence(c.count, c.out); !near(got, c.want) {
			t.Errorf("Confidence(%d, %d) = %v, want %v", c.count, c.out, got, c.want)
		}
	}
	if Confidence(2, 2) >= SuggestionThreshold || Confidence(3, 3) < SuggestionThreshold {
		t.Error("an always-taken edge must reach 0.7 at its third observation")
	}
	if Confidence(5, 5) >= SpeculationThreshold || Confidence(6, 6) < SpeculationThreshold {
		t.Error("an always-taken edge must reach 0.85 at its sixth observation")
	}
}

func TestScoreFormula(t *testing.T) {
	cases := []struct {
		conf, comm, rec, pr float64
		want                float64
	}{
		{0, 0, 0, 0, 0},
		{1, 1, 1, 1, 1.1},
		{0.5, 1, 1, 1, 0.8},        // 0.30 + 0.3 + 0.1 + 0.1
		{0.75, 0, 0.5, 0.2, 0.52},  // 0.45 + 0 + 0.05 + 0.02
		{0.1, 1, 0, 0.4, 0.4},      // 0.06 + 0.3 + 0 + 0.04
		{2.0 / 3, 0, 1, 0.5, 0.55}, // 0.40 + 0 + 0.1 + 0.05
		{0, 1, 0, 0, 0.3},          // a tool never seen after A, same community
	}
	for _, c := range cases {
		if got := Score(c.conf, c.comm, c.rec, c.pr); !near(got, c.want) {
			t.Errorf("Score(%v, %v, %v, %v) = %v, want %v", c.conf, c.comm, c.rec, c.pr, got, c.want)
		}
	}
}

func TestRecencyBoost(t *testing.T) {
	cases := []struct {
		last  int64
		all   []int64
		want  float64
		label string
	}{
		{5, nil, 0, "no successors"},
		{5, []int64{5}, 1, "single successor"},
		{7, []int64{7, 7}, 1, "all equal"},
		{10, []int64{0, 10}, 1, "newest"},
		{0, []int64{0, 10}, 0, "oldest"},
		{25, []int64{0, 25, 100}, 0.25, "a quarter of the span"},
	}
	for _, c := range cases {
		if got := RecencyBoost(c.last, c.all); !near(got, c.want) {
			t.Errorf("%s: RecencyBoost(%d, %v) = %v, want %v", c.label, c.last, c.all, got, c.want)
		}
	}
}

// handGraph: three workflows a b a c a b a b / a b / a b, so
// a→b 5, a→c 1, b→a 2, c→a 1; out(a) = 6, out(b) = 2, out(c) = 1.
func handGraph(t *testing.T) *Graph {
	return learnAll(t, sequences(t, []string{"a", "b", "a", "c", "a", "b", "a", "b"}, []string{"a", "b"}, []string{"a", "b"}))
}

// The PageRank of handGraph by hand: from a, 5/6 of the weight goes to b
// and 1/6 to c; b and c lead only to a. With d = 0.85 and n = 3:
//
//	r_a = 0.05 + 0.85(r_b + r_c), r_b + r_c = 0.1 + 0.85 r_a
//	⇒ r_a = 0.135/0.2775 = 54/111
//	r_b = 0.05 + 0.85·5/6·r_a, r_c = 0.05 + 0.85·1/6·r_a
//
// normalised by r_a: b 0.05·111/54 + 0.85·5/6 = 0.811111…, c 0.244444….
func TestHandComputedGraph(t *testing.T) {
	g := handGraph(t)
	ra := 54.0 / 111
	rb := 0.05 + 0.85*5/6*ra
	rc := 0.05 + 0.85/6*ra
	tools := g.Tools()
	want := map[string]struct {
		pr                 float64
		calls, starts      int
		in, out, ind, outd int
	}{
		"a": {ra, 6, 3, 3, 6, 2, 2},
		"b": {rb, 5, 0, 5, 2, 1, 1},
		"c": {rc, 1, 0, 1, 1, 1, 1},
	}
	if len(tools) != 3 || tools[0].Tool != "a" || tools[1].Tool != "b" || tools[2].Tool != "c" {
		t.Fatalf("tools by PageRank: %+v", tools)
	}
	sum := 0.0
	for _, ti := range tools {
		w := want[ti.Tool]
		if !near(ti.PageRank, w.pr) || ti.Calls != w.calls || ti.Starts != w.starts || ti.TransitionsIn != w.in ||
			ti.TransitionsOut != w.out || ti.InDegree != w.ind || ti.OutDegree != w.outd || ti.SelfLoop {
			t.Errorf("%s: %+v, want %+v", ti.Tool, ti, w)
		}
		sum += ti.PageRank
	}
	if !near(sum, 1) {
		t.Errorf("PageRank sums to %v", sum)
	}
	e, ok := g.EdgeBetween("a", "b")
	if !ok || e.Count != 5 || e.SourceObservations != 6 || !near(e.Confidence, 5.0/7) || !near(e.Weight, 0.5*5/7) {
		t.Errorf("a→b: %+v", e)
	}

	// Next after a: a has 6 observations (≥ 5), so the design score applies.
	// b: 0.6·5/7 + 0.3·comm + 0.1·1 (seen last) + 0.1·rb/ra
	// c: 0.6·1/7 + 0.3·comm + 0.1·0 (seen first) + 0.1·rc/ra
	// a: never after a (tier 3): 0.3·1 + 0.1·1
	comm := map[string]int{}
	for _, ti := range tools {
		comm[ti.Tool] = ti.Community
	}
	same := func(x string) float64 {
		if comm[x] == comm["a"] {
			return 1
		}
		return 0
	}
	p := g.Next([]string{"c", "a"}, 3)
	if p.Basis != BasisGraph || p.ContextTool != "a" || p.Observations != 6 || len(p.Suggestions) != 3 {
		t.Fatalf("prediction: %+v", p)
	}
	wantS := []Suggestion{
		{Tool: "b", Tier: TierObserved, Count: 5, Confidence: 5.0 / 7, Community: same("b"), Recency: 1, PageRank: rb / ra},
		{Tool: "c", Tier: TierRare, Count: 1, Confidence: 1.0 / 7, Community: same("c"), Recency: 0, PageRank: rc / ra},
		{Tool: "a", Tier: TierUnobserved, Count: 0, Confidence: 0, Community: 1, Recency: 0, PageRank: 1},
	}
	hand := []float64{
		0.6*5/7 + 0.3*same("b") + 0.1 + 0.1*(0.05*111/54+0.85*5/6),
		0.6*1/7 + 0.3*same("c") + 0 + 0.1*(0.05*111/54+0.85/6),
		0.3 + 0.1,
	}
	for i, s := range p.Suggestions {
		w := wantS[i]
		if s.Tool != w.Tool || s.Tier != w.Tier || s.Count != w.Count || !near(s.Confidence, w.Confidence) ||
			s.Community != w.Community || !near(s.Recency, w.Recency) || !near(s.PageRank, w.PageRank) || !near(s.Score, hand[i]) {
			t.Errorf("suggestion %d: %+v, want %+v with score %v", i, s, w, hand[i])
		}
	}

	// The ranking is by Probability, interpolated Witten-Bell (the trigram
	// c,a was seen once, below ContextMinObservations, so it is left out):
	// unigram a 6, b 5, c 1 of 12 (λ = 12/15) over uniform 1/3, then bigram
	// after a: b 5, c 1 of 6 (λ = 6/8).
	uni := func(c float64) float64 { return 0.8*c/12 + 0.2/3 }
	handP := []float64{0.75*5/6 + 0.25*uni(5), 0.75*1/6 + 0.25*uni(1), 0.25 * uni(6)}
	if !reflect.DeepEqual(p.Levels, []string{LevelBigram, LevelUnigram}) {
		t.Errorf("levels %v", p.Levels)
	}
	for i, s := range p.Suggestions {
		if !near(s.Probability, handP[i]) {
			t.Errorf("suggestion %d (%s): probability %v, want %v", i, s.Tool, s.Probability, handP[i])
		}
	}

	// b was followed by a call only twice: frequency prior (a 6, b 5, c 1 of 12).
	p = g.Next([]string{"b"}, 5)
	if p.Basis != BasisFrequencyPrior || p.Observations != 2 || len(p.Suggestions) != 3 {
		t.Fatalf("prediction after b: %+v", p)
	}
	for i, w := range []struct {
		tool  string
		share float64
	}{{"a", 0.5}, {"b", 5.0 / 12}, {"c", 1.0 / 12}} {
		if s := p.Suggestions[i]; s.Tool != w.tool || !near(s.Prior, w.share) || !near(s.Score, w.share) {
			t.Errorf("prior suggestion %d: %+v, want %s %v", i, s, w.tool, w.share)
		}
	}
	// No context: every workflow started with a.
	p = g.Next(nil, 2)
	if p.Basis != BasisStartPrior || len(p.Suggestions) != 2 || p.Suggestions[0].Tool != "a" || p.Suggestions[0].Prior != 1 ||
		p.Suggestions[1].Tool != "b" || p.Suggestions[1].Prior != 0 {
		t.Errorf("start prior: %+v", p)
	}
	// An unknown context tool, and k < 1.
	if p := g.Next([]string{"zzz"}, 1); p.Basis != BasisFrequencyPrior || len(p.Suggestions) != 1 || p.Suggestions[0].Tool != "a" {
		t.Errorf("unknown context: %+v", p)
	}
	if p := g.Next([]string{"a"}, 0); len(p.Suggestions) != 0 || p.Basis != BasisGraph {
		t.Errorf("k = 0: %+v", p)
	}
}

func TestPathHandComputed(t *testing.T) {
	g := handGraph(t)
	cases := []struct {
		from, to string
		tools    []string
		cost     float64 // Σ −ln(0.5·confidence), by hand
	}{
		{"a", "c", []string{"a", "c"}, -math.Log(0.5 / 7)},
		{"c", "b", []string{"c", "a", "b"}, -math.Log(0.5*1/2) - math.Log(0.5*5/7)},
		{"b", "c", []string{"b", "a", "c"}, -math.Log(0.5*2/3) - math.Log(0.5/7)},
		{"b", "b", []string{"b"}, 0},
	}
	for _, c := range cases {
		r, err := g.Path(c.from, c.to)
		if err != nil {
			t.Fatalf("%s→%s: %v", c.from, c.to, err)
		}
		if !reflect.DeepEqual(r.Tools, c.tools) || !near(r.Cost, c.cost) || !near(r.Likelihood, math.Exp(-c.cost)) ||
			r.Hops != len(c.tools)-1 || len(r.Edges) != r.Hops {
			t.Errorf("%s→%s: %+v, want %v cost %v", c.from, c.to, r, c.tools, c.cost)
		}
		for i, e := range r.Edges {
			if e.From != c.tools[i] || e.To != c.tools[i+1] {
				t.Errorf("%s→%s: edge %d is %s→%s", c.from, c.to, i, e.From, e.To)
			}
		}
	}
	if _, err := g.Path("a", "nope"); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	g2 := learnAll(t, sequences(t, []string{"x", "y"}, []string{"z"}))
	if _, err := g2.Path("y", "x"); !errors.Is(err, ErrNoPath) {
		t.Errorf("y→x: %v", err)
	}
	if _, err := g2.Path("x", "z"); !errors.Is(err, ErrNoPath) {
		t.Errorf("x→z: %v", err)
	}
}

// randomGraph has n tools and about m distinct edges with random counts,
// built from a fixed seed.
func randomGraph(n, m int, seed uint64) *Graph {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := NewGraph()
	name := func(i int) string { return "tool-" + string(rune('a'+i%26)) + "-" + itoa(i) }
	for i := 0; i < n; i++ {
		_ = g.putNode(nodeRow{Tool: name(i), Calls: 1 + rng.IntN(100), Starts: rng.IntN(3)})
	}
	for len(g.edges) < m {
		u, v := rng.IntN(n), rng.IntN(n)
		// a skewed out-degree: lower ids are busier
		if rng.IntN(2) == 0 {
			u = rng.IntN(1 + n/10)
		}
		c := 1 + rng.IntN(20)
		_ = g.putEdge(edgeRow{From: name(u), To: name(v), Count: c, FirstSeenMS: 0, LastSeenMS: int64(rng.IntN(1_000_000))})
	}
	for _, e := range g.edges {
		g.nodes[e.From].Out += e.Count
		g.nodes[e.To].In += e.Count
	}
	g.totals = totalsRow{Tools: n, Edges: len(g.edges)}
	return g
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// gonum's PageRankSparse over the same view agrees with the deterministic
// power iteration.
func TestPageRankMatchesGonum(t *testing.T) {
	for name, g := range map[string]*Graph{"hand": handGraph(t), "tau-bench": sampleGraph(t), "random": randomGraph(300, 3000, 7)} {
		a := g.analysis()
		ref := network.PageRankSparse(gview{a: a}, Damping, PageRankTolerance)
		worst := 0.0
		for i, r := range a.pr {
			worst = max(worst, math.Abs(r-ref[int64(i)]))
		}
		if worst > 1e-6 {
			t.Errorf("%s: largest difference from gonum %g", name, worst)
		}
	}
}

// Probabilities sum to 1 over the tools and rank the suggestions, for
// every context of one or two calls of the tau-bench graph, with and
// without outcomes.
func TestNextProbabilities(t *testing.T) {
	g := sampleGraph(t)
	a := g.analysis()
	n := len(a.tools)
	gated := 0
	check := func(p Prediction) {
		t.Helper()
		if len(p.Suggestions) != n {
			t.Fatalf("after %v: %d suggestions of %d tools", p.After, len(p.Suggestions), n)
		}
		sum := 0.0
		for i, s := range p.Suggestions {
			sum += s.Probability
			ordered := i == 0 || i == 1 && p.BigramFirst || s.Probability <= p.Suggestions[i-1].Probability
			if s.Probability <= 0 || !ordered {
				t.Fatalf("after %v: suggestion %d %+v out of order", p.After, i, s)
			}
		}
		if p.BigramFirst {
			gated++
			if p.Suggestions[0].Probability >= p.Suggestions[1].Probability {
				t.Fatalf("after %v: bigram first, yet the most probable", p.After)
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("after %v: probabilities sum to %v", p.After, sum)
		}
	}
	check(g.Next(nil, n))
	levels := map[string]int{}
	for _, x := range a.tools {
		for _, y := range a.tools {
			for _, f := range []bool{false, true} {
				p := g.NextCalls([]Call{{Tool: y}, {Tool: x, Failed: f}}, n)
				check(p)
				levels[p.Levels[0]]++
			}
			check(g.Next([]string{y, x}, n))
		}
	}
	if levels[LevelTrigramOutcome] == 0 || levels[LevelBigram] == 0 || gated == 0 {
		t.Errorf("most specific levels used: %v; bigram first %d times", levels, gated)
	}
}

// The pruned candidate set of the probability ranking gives the exact top
// k: the first k of the ranking of every tool.
func TestNextCandidatesAreExact(t *testing.T) {
	for name, g := range map[string]*Graph{"tau-bench": sampleGraph(t), "random": randomGraph(400, 4000, 11)} {
		a := g.analysis()
		n := len(a.tools)
		contexts := [][]Call{nil}
		for i, x := range a.tools {
			if name == "random" && i%7 != 0 {
				continue
			}
			contexts = append(contexts, []Call{{Tool: x}}, []Call{{Tool: a.tools[(i+1)%n]}, {Tool: x, Failed: i%2 == 0}})
		}
		for _, c := range contexts {
			all := g.NextCalls(c, n).Suggestions
			for _, k := range []int{1, 3, 10} {
				if got := g.NextCalls(c, k).Suggestions; !reflect.DeepEqual(got, all[:min(k, n)]) {
					t.Fatalf("%s after %v, k=%d: %+v\nall: %+v", name, c, k, got, all[:min(k, n)])
				}
			}
		}
	}
}

// The design ranking's pruned candidate set gives the exact top k over
// all tools.
func TestNextIsExactTopK(t *testing.T) {
	for name, src := range map[string]*Graph{"tau-bench": sampleGraph(t), "random": randomGraph(400, 4000, 11)} {
		g := copyGraph(src)
		p := defaultParams
		p.design = true
		g.setParams(p)
		a := g.analysis()
		for ctx := range a.tools {
			if a.out[ctx] < MinObservations {
				continue
			}
			all := make([]Suggestion, len(a.tools))
			for v := range a.tools {
				all[v] = a.score(int32(ctx), int32(v))
			}
			sort.Slice(all, func(i, j int) bool {
				if all[i].Tier != all[j].Tier {
					return all[i].Tier < all[j].Tier
				}
				if all[i].Score != all[j].Score {
					return all[i].Score > all[j].Score
				}
				return all[i].Tool < all[j].Tool
			})
			for _, k := range []int{1, 3, 10} {
				got := g.Next([]string{a.tools[ctx]}, k).Suggestions
				if !reflect.DeepEqual(got, all[:min(k, len(all))]) {
					t.Fatalf("%s after %s, k=%d: %+v\nbrute force: %+v", name, a.tools[ctx], k, got, all[:min(k, len(all))])
				}
			}
		}
	}
}

// copyGraph is a copy of g's counts with its own analysis cache.
func copyGraph(g *Graph) *Graph {
	c := NewGraph()
	for _, r := range g.nodes {
		_ = c.putNode(*r)
	}
	for _, r := range g.edges {
		_ = c.putEdge(*r)
	}
	for _, r := range g.ctxs {
		_ = c.putContext(*r)
	}
	c.totals = g.totals
	return c
}

// everything is the observable output of a graph: tools (ranks,
// communities), edges, every prediction and every path.
type everything struct {
	Tools []ToolInfo
	Edges []Edge
	Next  []Prediction
	Paths []Route
	Errs  []string
}

func observe(g *Graph) everything {
	var out everything
	out.Tools = g.Tools()
	out.Edges = g.Edges()
	names := make([]string, 0, len(out.Tools))
	for _, ti := range out.Tools {
		names = append(names, ti.Tool)
	}
	sort.Strings(names)
	out.Next = append(out.Next, g.Next(nil, 3))
	for _, x := range names {
		out.Next = append(out.Next, g.Next([]string{x}, 3), g.NextCalls([]Call{{Tool: x, Failed: true}}, 3))
		for _, y := range names {
			out.Next = append(out.Next, g.NextCalls([]Call{{Tool: y}, {Tool: x}}, 3))
		}
		for _, y := range names {
			r, err := g.Path(x, y)
			out.Paths = append(out.Paths, r)
			if err != nil {
				out.Errs = append(out.Errs, err.Error())
			}
		}
	}
	return out
}

// The same counts, inserted into the maps in different orders, give
// bit-identical ranks, communities, predictions and paths, every time.
func TestDeterministicAnalysis(t *testing.T) {
	src := sampleGraph(t)
	want := observe(src)
	if len(want.Tools) != 14 || src.Communities() < 2 {
		t.Fatalf("unexpected sample graph: %d tools, %d communities", len(want.Tools), src.Communities())
	}
	nodes := make([]nodeRow, 0, len(src.nodes))
	for _, r := range src.nodes {
		nodes = append(nodes, *r)
	}
	edges := make([]edgeRow, 0, len(src.edges))
	for _, r := range src.edges {
		edges = append(edges, *r)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Tool < nodes[j].Tool })
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].From+"\x00"+edges[i].To < edges[j].From+"\x00"+edges[j].To
	})
	ctxs := make([]contextRow, 0, len(src.ctxs))
	for _, r := range src.ctxs {
		ctxs = append(ctxs, *r)
	}
	sort.Slice(ctxs, func(i, j int) bool { return fmt.Sprint(ctxs[i].key()) < fmt.Sprint(ctxs[j].key()) })
	for seed := uint64(0); seed < 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		rng.Shuffle(len(ctxs), func(i, j int) { ctxs[i], ctxs[j] = ctxs[j], ctxs[i] })
		g := NewGraph()
		for _, r := range ctxs {
			_ = g.putContext(r)
		}
		for _, r := range nodes {
			_ = g.putNode(r)
		}
		for _, r := range edges {
			_ = g.putEdge(r)
		}
		g.totals = src.totals
		if got := observe(g); !reflect.DeepEqual(got, want) {
			t.Fatalf("insertion order %d changed the output", seed)
		}
		// and recomputing on the same graph gives the same bits again
		g.an.invalidate()
		if got := observe(g); !reflect.DeepEqual(got, want) {
			t.Fatalf("recompute %d changed the output", seed)
		}
	}
}

func TestEmptyGraph(t *testing.T) {
	g := NewGraph()
	if p := g.Next([]string{"a"}, 3); len(p.Suggestions) != 0 || p.Basis != BasisFrequencyPrior {
		t.Errorf("empty graph: %+v", p)
	}
	if tools := g.Tools(); len(tools) != 0 || g.Communities() != 0 {
		t.Errorf("empty graph tools: %+v", tools)
	}
	if _, err := g.Path("a", "b"); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("empty graph path: %v", err)
	}
}
