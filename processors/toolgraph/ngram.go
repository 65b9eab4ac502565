package toolgraph

import (
	"math"
	"sort"
)

// Context levels of the next-tool model, most specific first. A level's
// counts are the calls that followed its context in the learned
// workflows; Next uses a level when its context was followed by at least
// ContextMinObservations calls.
const (
	// LevelTrigramOutcome: the last two calls and whether each failed
	// (contextRow counts, exact). Needs the outcomes (NextCalls).
	LevelTrigramOutcome = "trigram_outcome"
	// LevelTrigram: the last two tools (contextRow counts summed over the
	// outcomes).
	LevelTrigram = "trigram"
	// LevelBigramOutcome: the last tool and whether its call failed
	// (contextRow counts summed over the call before). Needs the outcomes.
	LevelBigramOutcome = "bigram_outcome"
	// LevelBigram: the last tool (edge counts, count(A→·)); for the first
	// call of a workflow, the workflows' first calls (node starts).
	LevelBigram = "bigram"
	// LevelUnigram: every call (node calls): the model's floor.
	LevelUnigram = "unigram"
)

// ContextMinObservations is the number of observed calls after a context
// below which Next leaves that context level out (backs off to the less
// specific ones); it applies to the levels above LevelBigram, which is
// used whenever the last tool has a successor. 20 was chosen on the tuning halves of the evaluation
// (even tau-bench task ids, even HotPotQA questions) among 0, 2, 5, 10, 20
// and 40, by the sum of top-1 and top-3 accuracy over both domains; the
// report halves were not looked at for it (see Report.Halves and the
// package documentation).
const ContextMinObservations = 20

// TopGateZ is the evidence the most specific context level needs to put
// another tool first than the bigram level's first: the model's first
// tool a stays first only when that level's counts prefer it to the
// bigram level's first tool b by a one-sided sign test at this z (2.576:
// a 0.5% one-sided level),
// c(a) − c(b) ≥ z·√(c(a) + c(b)) with c(a) > c(b) (the calls after the
// context that went to a and to b; Dixon & Mood 1946, the normal
// approximation). Otherwise b is moved to first place and the rest keep
// their order. The higher levels move probability between close
// candidates on thin evidence: without the gate, top-1 among the
// tau-bench calls with a previous call was below the bigram baseline
// on both halves (0.4835 / 0.4918 tuning, 0.5504 / 0.5565 report), while
// the outcome levels after a failed HotPotQA Search pass it. Chosen on
// the tuning halves (even tau-bench task ids, even HotPotQA questions),
// after the levels and ContextMinObservations, among no gate and z = 0,
// 1, 1.645, 1.96, 2.576 and 3, by the sum of top-1 and top-3 over both
// domains among the values whose top-1 with a previous call is at or
// above the bigram baseline on both tuning halves (2.576 and 3 were;
// TestContextLevelChoice).
const TopGateZ = 2.576

// Call is one call of a context: a tool and, when known, its outcome.
type Call struct {
	// Tool is the tool id.
	Tool string `json:"tool"`
	// Failed: the call failed (success false).
	Failed bool `json:"failed,omitempty"`
}

// succCounts are the calls observed after one context: per tool (node
// id) and in total.
type succCounts struct {
	n   map[int32]int
	tot int
}

func (s *succCounts) add(v int32, c int) {
	if s.n == nil {
		s.n = map[int32]int{}
	}
	s.n[v] += c
	s.tot += c
}

type triKey struct {
	before, from int32 // before −1 = from was the first call
}
type triOutKey struct {
	before, from int32
	bf, ff       bool
}
type biOutKey struct {
	from int32
	ff   bool
}

// ngram holds the context levels' counts of an analysis.
type ngram struct {
	triOut map[triOutKey]*succCounts
	tri    map[triKey]*succCounts
	biOut  map[biOutKey]*succCounts
	starts *succCounts // first calls (node starts)
	calls  *succCounts // every call (node calls)
}

// buildNgram sums the contextRows of g into the three context tables and
// gathers the starts and calls of a's nodes.
func buildNgram(g *Graph, a *analysis) ngram {
	idx := a.idx
	m := ngram{triOut: map[triOutKey]*succCounts{}, tri: map[triKey]*succCounts{}, biOut: map[biOutKey]*succCounts{},
		starts: &succCounts{}, calls: &succCounts{}}
	for v := range a.tools {
		if c := a.start[v]; c > 0 {
			m.starts.add(int32(v), c)
		}
		if c := a.calls[v]; c > 0 {
			m.calls.add(int32(v), c)
		}
	}
	for _, r := range g.ctxs {
		from, ok1 := idx[r.From]
		to, ok2 := idx[r.To]
		before := int32(-1)
		ok3 := true
		if r.Before != "" {
			before, ok3 = idx[r.Before]
		}
		if !ok1 || !ok2 || !ok3 { // cannot happen with rows written by learn
			continue
		}
		at(m.triOut, triOutKey{before, from, r.BeforeFailed, r.FromFailed}).add(to, r.Count)
		at(m.tri, triKey{before, from}).add(to, r.Count)
		at(m.biOut, biOutKey{from, r.FromFailed}).add(to, r.Count)
	}
	return m
}

// at returns the counts of k in m, created empty when absent.
func at[K comparable](m map[K]*succCounts, k K) *succCounts {
	s := m[k]
	if s == nil {
		s = &succCounts{}
		m[k] = s
	}
	return s
}

// levelCounts returns the context levels that apply to after, most
// specific first, with their counts (levels whose context was followed
// by fewer than ContextMinObservations calls left out; LevelUnigram
// always last). outcomes says the Failed flags of after are known.
func (a *analysis) levelCounts(after []Call, outcomes bool) ([]string, []*succCounts) {
	var names []string
	var cs []*succCounts
	use := func(name string, s *succCounts) {
		floor := a.p.minObs
		if name == LevelBigram {
			floor = 1 // as the bigram baseline: any observed successor
		}
		if s != nil && s.tot >= max(floor, 1) && !a.p.without[name] {
			names, cs = append(names, name), append(cs, s)
		}
	}
	n := len(after)
	if n == 0 {
		use(LevelBigram, a.ng.starts)
	} else if from, ok := a.idx[after[n-1].Tool]; ok {
		before, okB := int32(-1), true
		if n >= 2 {
			before, okB = a.idx[after[n-2].Tool]
		}
		if okB {
			if outcomes {
				bf := n >= 2 && after[n-2].Failed
				use(LevelTrigramOutcome, a.ng.triOut[triOutKey{before, from, bf, after[n-1].Failed}])
			}
			use(LevelTrigram, a.ng.tri[triKey{before, from}])
		}
		if outcomes {
			use(LevelBigramOutcome, a.ng.biOut[biOutKey{from, after[n-1].Failed}])
		}
		s := &succCounts{}
		for _, e := range a.succ[from] {
			s.add(e.to, e.count)
		}
		use(LevelBigram, s)
	}
	if a.ng.calls.tot > 0 {
		names, cs = append(names, LevelUnigram), append(cs, a.ng.calls)
	}
	return names, cs
}

// probability is the interpolated Witten-Bell estimate of
// P(next = v | context) for tool (node id) v among n tools, from the least
// specific level up (Witten & Bell 1991; Chen & Goodman 1998, §2.5):
//
//	p_0(t) = 1 / n
//	p_l(t) = λ_l · c_l(t) / N_l + (1 − λ_l) · p_{l−1}(t),  λ_l = N_l / (N_l + T_l)
//
// with c_l(t) the calls of t after level l's context, N_l their total and
// T_l the number of distinct tools among them. Witten-Bell needs no
// parameter: a context followed by many different tools trusts its own
// counts less. Over the n tools the estimates sum to 1.
func probability(v int32, n int, levels []*succCounts) float64 {
	p := 1 / float64(n)
	for l := len(levels) - 1; l >= 0; l-- {
		s := levels[l]
		N, T := float64(s.tot), float64(len(s.n))
		lam := N / (N + T)
		p = lam*float64(s.n[v])/N + (1-lam)*p
	}
	return p
}

// candidates are the tools that can make the top k: every tool counted
// by a level above LevelUnigram, then the others by decreasing calls
// (their probability is increasing in their calls alone) until k of them
// are in, plus every further one with as many calls as the last (ties of
// probability, broken by the design score). All tools when k ≥ their
// number.
func (a *analysis) candidates(levels []*succCounts, k int) []int32 {
	if k >= len(a.tools) {
		out := make([]int32, len(a.tools))
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	in := map[int32]bool{}
	var out []int32
	for _, s := range levels[:max(0, len(levels)-1)] {
		for v := range s.n {
			if !in[v] {
				in[v] = true
				out = append(out, v)
			}
		}
	}
	added, last := 0, -1
	for _, v := range a.byCalls {
		if in[v] {
			continue
		}
		if added >= k && a.calls[v] != last {
			break
		}
		in[v] = true
		out = append(out, v)
		added, last = added+1, a.calls[v]
	}
	return out
}

// gateTop applies TopGateZ to ranked (all candidates, best first): when
// a level above LevelBigram was used and its counts do not prefer the
// first tool to the bigram level's first tool by the sign test, the
// latter is moved to first place and gateTop returns true.
func (a *analysis) gateTop(ranked []Suggestion, cand []int32, names []string, levels []*succCounts) bool {
	if a.p.gateZ < 0 || len(ranked) < 2 {
		return false
	}
	ib := -1
	for i, n := range names {
		if n == LevelBigram {
			ib = i
		}
	}
	if ib <= 0 { // no bigram level, or nothing above it
		return false
	}
	// the bigram level's first: the candidates ranked by the levels from
	// LevelBigram down, with the same tie-breaks
	bi := make([]Suggestion, len(ranked))
	byTool := make(map[string]int32, len(cand))
	for _, v := range cand {
		byTool[a.tools[v]] = v
	}
	for i, s := range ranked {
		bi[i] = s
		bi[i].Probability = probability(byTool[s.Tool], len(a.tools), levels[ib:])
	}
	b := rankByProbability(bi, 1, !a.p.noTiers)[0].Tool
	if b == ranked[0].Tool {
		return false
	}
	top := levels[0]
	ca, cb := float64(top.n[byTool[ranked[0].Tool]]), float64(top.n[byTool[b]])
	if ca > cb && ca-cb >= a.p.gateZ*math.Sqrt(ca+cb) {
		return false
	}
	j := 1
	for ranked[j].Tool != b {
		j++
	}
	first := ranked[j]
	copy(ranked[1:j+1], ranked[:j])
	ranked[0] = first
	return true
}

// rankByProbability orders suggestions by Probability, then by the design
// ranking (evidence tier, then score; only as a tie-breaker), then name,
// and keeps the first k.
func rankByProbability(out []Suggestion, k int, tiers bool) []Suggestion {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Probability != out[j].Probability {
			return out[i].Probability > out[j].Probability
		}
		if tiers && out[i].Tier != out[j].Tier {
			return out[i].Tier < out[j].Tier
		}
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Tool < out[j].Tool
	})
	return out[:min(k, len(out))]
}
