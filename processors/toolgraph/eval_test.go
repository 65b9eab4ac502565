package toolgraph

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// atLeastBigram fails when the predictor is below the bigram baseline on
// top-1 or top-3 of acc.
func atLeastBigram(t *testing.T, name string, acc Accuracy) {
	t.Helper()
	if acc.NextToolTop1 < acc.BaselineBigramTop1 || acc.NextToolTop3 < acc.BaselineBigramTop3 {
		t.Errorf("%s: top-1 %.4f (bigram %.4f), top-3 %.4f (bigram %.4f)", name,
			acc.NextToolTop1, acc.BaselineBigramTop1, acc.NextToolTop3, acc.BaselineBigramTop3)
	}
}

// The leave-one-task-out evaluation on the 200 bundled sessions. The
// floors are the measured values rounded down to two decimals (see the
// package documentation for the exact figures).
func TestEvaluateNextTool(t *testing.T) {
	t.Parallel()
	rep, err := EvaluateNextTool(sampleRecords(t))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", b)
	if rep.Tasks != 50 || rep.Sessions != 200 || rep.Predictions != 1164 || rep.FirstCalls != 182 ||
		rep.WithContext.Predictions != rep.Predictions-rep.FirstCalls ||
		rep.Tuning.Predictions+rep.Held.Predictions != rep.Predictions || rep.Tuning.Predictions == 0 {
		t.Fatalf("evaluated %d tasks, %d sessions, %d predictions (%d first calls)", rep.Tasks, rep.Sessions, rep.Predictions, rep.FirstCalls)
	}
	// Never below bigram: on all calls, on the tuning half and on the
	// report half (the one no choice looked at), and on the calls with a
	// previous call, where the first-place gate (TopGateZ) keeps top-1 at
	// bigram's (without it: 0.517 against 0.524) ...
	atLeastBigram(t, "all calls", rep.Accuracy)
	atLeastBigram(t, "tuning half", rep.Tuning)
	atLeastBigram(t, "report half", rep.Held)
	atLeastBigram(t, "with context", rep.WithContext)
	atLeastBigram(t, "tuning half with context", rep.TuningWithContext)
	atLeastBigram(t, "report half with context", rep.HeldWithContext)
	// ... and above it on top-3 by more than 5 points.
	if rep.NextToolTop3 < rep.BaselineBigramTop3+0.05 || rep.Held.NextToolTop3 < rep.Held.BaselineBigramTop3+0.03 {
		t.Errorf("top-3 %.4f vs bigram %.4f; report half %.4f vs %.4f", rep.NextToolTop3, rep.BaselineBigramTop3, rep.Held.NextToolTop3, rep.Held.BaselineBigramTop3)
	}
	if c := rep.WithContext; c.NextToolTop3 <= c.BaselineBigramTop3 {
		t.Errorf("top-3 with context: graph %.4f, bigram %.4f", c.NextToolTop3, c.BaselineBigramTop3)
	}
	floors := []struct {
		name       string
		got, floor float64
	}{
		{"next_tool_top3", rep.NextToolTop3, 0.81},
		{"next_tool_top1", rep.NextToolTop1, 0.52},
		{"with_context.next_tool_top3", rep.WithContext.NextToolTop3, 0.78},
		{"with_context.next_tool_top1", rep.WithContext.NextToolTop1, 0.52},
		{"report_half.next_tool_top3", rep.Held.NextToolTop3, 0.81},
		{"report_half.next_tool_top1", rep.Held.NextToolTop1, 0.55},
	}
	for _, f := range floors {
		if f.got < f.floor {
			t.Errorf("%s = %.4f, below the measured %.2f", f.name, f.got, f.floor)
		}
	}
	// The baselines are what they were measured to be (they do not depend on
	// the graph code).
	baselines := []struct {
		name     string
		got, lo  float64
		hiExclus float64
	}{
		{"baseline_frequency_top1", rep.BaselineFrequencyTop1, 0.32, 0.33},
		{"baseline_frequency_top3", rep.BaselineFrequencyTop3, 0.54, 0.55},
		{"baseline_bigram_top1", rep.BaselineBigramTop1, 0.50, 0.51},
		{"baseline_bigram_top3", rep.BaselineBigramTop3, 0.75, 0.76},
	}
	for _, b := range baselines {
		if b.got < b.lo || b.got >= b.hiExclus {
			t.Errorf("%s = %.4f, measured in [%.2f, %.2f)", b.name, b.got, b.lo, b.hiExclus)
		}
	}
	if _, err := EvaluateNextTool(nil); err == nil {
		t.Error("no records: want an error")
	}
}

var (
	hotpotOnce sync.Once
	hotpotSess map[string][]session
	hotpotErr  error
)

// hotpotSessions are the actions of both bundled Reflexion runs, as
// EvaluateReflexionActions reads them.
func hotpotSessions(t *testing.T) map[string][]session {
	t.Helper()
	hotpotOnce.Do(func() {
		hotpotSess = map[string][]session{}
		for _, name := range []string{reflexion.RunReflexion, reflexion.RunBase} {
			run, err := reflexion.Bundled(name)
			if err != nil {
				hotpotErr = err
				return
			}
			if hotpotSess[name], hotpotErr = reflexionSessions(run, name); hotpotErr != nil {
				return
			}
		}
	})
	if hotpotErr != nil {
		t.Fatal(hotpotErr)
	}
	return hotpotSess
}

// The second domain: the ReAct actions of both Reflexion HotPotQA runs,
// leave-one-question-out. Top-1 is well above bigram (which, with Search
// the most frequent successor of every action, is the frequency
// baseline) on both halves; top-3 is the same (three tools).
func TestEvaluateReflexionActions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		preds        int
		top1, report float64
	}{
		{reflexion.RunReflexion, 1896, 0.84, 0.83},
		{reflexion.RunBase, 1795, 0.88, 0.88},
	} {
		run, err := reflexion.Bundled(c.name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := EvaluateReflexionActions(run, c.name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		t.Logf("%s", b)
		if rep.Tasks != 100 || rep.Predictions != c.preds || rep.Domain != DomainHotPotQA+"/"+c.name {
			t.Fatalf("%s: %d tasks, %d predictions, domain %q", c.name, rep.Tasks, rep.Predictions, rep.Domain)
		}
		atLeastBigram(t, c.name+" all", rep.Accuracy)
		atLeastBigram(t, c.name+" with context", rep.WithContext)
		atLeastBigram(t, c.name+" tuning half", rep.Tuning)
		atLeastBigram(t, c.name+" report half", rep.Held)
		atLeastBigram(t, c.name+" tuning half with context", rep.TuningWithContext)
		atLeastBigram(t, c.name+" report half with context", rep.HeldWithContext)
		if rep.NextToolTop1 < c.top1 || rep.Held.NextToolTop1 < c.report || rep.NextToolTop1 < rep.BaselineBigramTop1+0.1 {
			t.Errorf("%s: top-1 %.4f (report half %.4f), bigram %.4f", c.name, rep.NextToolTop1, rep.Held.NextToolTop1, rep.BaselineBigramTop1)
		}
	}
}

// choiceTest skips a tuning-choice test under the race detector: each is
// a single-threaded computation over the evaluation folds (their parallel
// parts share only read-only folds), whose assertions the detector does
// not change, and which it slowed tenfold (their test time 18 s without
// it, 335 s with it, 2026-12-02). make test runs them without it (the
// Makefile's NORACE_TESTS), so CI still runs them and they can still fail.
func choiceTest(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a tuning-choice evaluation: make test runs it without -race")
	}
}

// The choice of the context levels and of ContextMinObservations, made on
// the tuning halves only (even task ids of tau-bench, even question
// numbers of the Reflexion run): the shipped model has the largest sum of
// top-1 and top-3 over both domains' tuning halves among the variants
// below. The report halves are logged, not compared.
func TestContextLevelChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty-four leave-one-task-out runs on two domains")
	}
	choiceTest(t)
	t.Parallel()
	domains := [][]session{sampleSessions(t), hotpotSessions(t)[reflexion.RunReflexion]}
	folds := foldsOf(t, domains...)
	type variant struct {
		name    string
		minObs  int
		without []string
		gateZ   float64 // -1: the levels were chosen without the gate
	}
	var variants []variant
	sets := []struct {
		name    string
		without []string
	}{
		{"all four levels", nil},
		{"no plain trigram", []string{LevelTrigram}},
		{"no outcomes", []string{LevelTrigramOutcome, LevelBigramOutcome}},
		{"bigram only", []string{LevelTrigramOutcome, LevelTrigram, LevelBigramOutcome}},
	}
	for _, set := range sets {
		for _, m := range []int{0, 2, 5, 10, 20, 40} {
			if set.without != nil && len(set.without) == 3 && m != 0 {
				continue // the floor does not apply to the bigram level
			}
			variants = append(variants, variant{fmt.Sprintf("%s, floor %d", set.name, m), m, set.without, -1})
		}
	}
	// score sums top-1 and top-3 over both domains' tuning and report
	// halves; ok: top-1 with a previous call at or above bigram on every
	// tuning half
	score := func(p params) (tune, report float64, ok bool) {
		ok = true
		for i, d := range domains {
			r := evaluateFolds(d, folds[i], &p)
			tune += r.Tuning.NextToolTop1 + r.Tuning.NextToolTop3
			report += r.Held.NextToolTop1 + r.Held.NextToolTop3
			tc := r.TuningWithContext
			ok = ok && tc.NextToolTop1 >= tc.BaselineBigramTop1
			t.Logf("   tuning with context top-1 %.4f (bigram %.4f), top-3 %.4f (bigram %.4f); report with context top-1 %.4f (bigram %.4f)",
				tc.NextToolTop1, tc.BaselineBigramTop1, tc.NextToolTop3, tc.BaselineBigramTop3, r.HeldWithContext.NextToolTop1, r.HeldWithContext.BaselineBigramTop1)
		}
		return tune, report, ok
	}
	best, bestTune := "", -1.0
	for _, v := range variants {
		p := defaultParams
		p.minObs, p.gateZ = v.minObs, v.gateZ
		p.without = map[string]bool{}
		for _, l := range v.without {
			p.without[l] = true
		}
		tune, report, _ := score(p)
		t.Logf("%-32s tuning %.4f  (report %.4f)", v.name, tune, report)
		if tune > bestTune+1e-12 {
			best, bestTune = v.name, tune
		}
	}
	if want := fmt.Sprintf("all four levels, floor %d", ContextMinObservations); best != want {
		t.Errorf("best on the tuning halves: %s, shipped: %s", best, want)
	}

	// Then TopGateZ, for the shipped levels and floor: the largest sum of
	// top-1 and top-3 on the tuning halves among the gates whose top-1
	// with a previous call is at or above the bigram baseline's on both
	// tuning halves.
	bestZ, bestTune := -2.0, -1.0
	for _, z := range []float64{-1, 0, 1, 1.645, 1.96, 2.576, 3} {
		p := defaultParams
		p.gateZ = z
		tune, report, ok := score(p)
		t.Logf("gate z %-5g tuning %.4f  (report %.4f)  at or above bigram with context: %v", z, tune, report, ok)
		if ok && tune > bestTune+1e-12 {
			bestZ, bestTune = z, tune
		}
	}
	if bestZ != TopGateZ {
		t.Errorf("best gate on the tuning halves: z %g, shipped: %g", bestZ, TopGateZ)
	}
}

// The ablations of the design score the package documentation reports
// (measured with the design score as the ranking, as it was before the
// context levels; it now breaks ties and is the graph term of hybrid
// search and workflow suggestions), so the documented reasons for each
// choice stay true.
func TestEvaluationAblations(t *testing.T) {
	if testing.Short() {
		t.Skip("six leave-one-task-out runs")
	}
	choiceTest(t)
	t.Parallel()
	sessions := sampleSessions(t)
	run := func(p params) Report {
		t.Helper()
		r, err := evaluate(sessions, &p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	design := defaultParams
	design.design = true
	shipped := run(design)
	variant := func(f func(*params)) Report {
		p := design
		f(&p)
		return run(p)
	}
	noTiers := variant(func(p *params) { p.noTiers = true })
	rankRecency := variant(func(p *params) { p.recency = recencyRank })
	noRecency := variant(func(p *params) { p.recency = recencyNone })
	prPrior := variant(func(p *params) { p.prior = priorPageRank })
	noCommunity := variant(func(p *params) { p.useCommunity = false })
	t.Logf("design score  top-1 %.4f top-3 %.4f", shipped.NextToolTop1, shipped.NextToolTop3)
	for name, r := range map[string]Report{"no tiers": noTiers, "rank recency": rankRecency, "no recency": noRecency,
		"PageRank prior": prPrior, "no community": noCommunity} {
		t.Logf("%-15s top-1 %.4f top-3 %.4f (design %.4f %.4f)", name, r.NextToolTop1, r.NextToolTop3, shipped.NextToolTop1, shipped.NextToolTop3)
		if r.NextToolTop3 >= shipped.NextToolTop3 {
			t.Errorf("%s: top-3 %.4f, not below the design's %.4f", name, r.NextToolTop3, shipped.NextToolTop3)
		}
	}
	if noTiers.NextToolTop3 > shipped.NextToolTop3-0.05 {
		t.Errorf("evidence tiers are worth %.4f top-3, documented as 0.059", shipped.NextToolTop3-noTiers.NextToolTop3)
	}
	if prPrior.NextToolTop3 > shipped.NextToolTop3-0.1 {
		t.Errorf("the frequency prior is worth %.4f top-3 over PageRank, documented as 0.152", shipped.NextToolTop3-prPrior.NextToolTop3)
	}
	for _, k := range []float64{0.5, 2, 5} {
		r := variant(func(p *params) { p.k = k })
		if math.Abs(r.NextToolTop3-shipped.NextToolTop3) > 0.005 || math.Abs(r.NextToolTop1-shipped.NextToolTop1) > 0.005 {
			t.Errorf("smoothing k=%v: top-1 %.4f top-3 %.4f, documented as the same as k=1 (%.4f %.4f)",
				k, r.NextToolTop1, r.NextToolTop3, shipped.NextToolTop1, shipped.NextToolTop3)
		}
	}
	// The design score as the ranking falls below bigram on HotPotQA,
	// which is why it only breaks ties now.
	h, err := evaluate(hotpotSessions(t)[reflexion.RunReflexion], &design)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("design score on HotPotQA (reflexion run): top-1 %.4f, bigram %.4f", h.NextToolTop1, h.BaselineBigramTop1)
}

func TestEvaluateRejectsBadRecords(t *testing.T) {
	_, err := EvaluateNextTool([]taubench.Record{{TaskID: 0, Reward: 2}})
	if err == nil {
		t.Error("a record taubench.Events rejects: want an error")
	}
}

// TestWordsChoice recomputes the choice of WordsLambda,
// WordMinObservations, the stop words and how the words mix with the
// context model, on the tuning half of tau-bench only (even task ids), by
// the sum of top-1 and top-3 of NextAfterMessage; the report half is
// logged, never compared. Variants: λ 0.5 … 0, a word used from 1, 3, 5
// or 10 observations, mixed with the whole context model without the
// first-place gate (shipped), with it, or with the levels from bigram
// down only, and with 43 English function words left out of the words. It also checks the shipped
// model stays at or above the bigram baseline on both halves, top-1 and
// top-3, all calls and those with a previous call.
func TestWordsChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("ninety-six leave-one-task-out runs")
	}
	choiceTest(t)
	t.Parallel()
	stopped := withoutStopWords(sampleSessions(t))
	learned := foldsOf(t, sampleSessions(t), stopped)
	folds := map[bool][]fold{false: learned[0], true: learned[1]}
	type mix struct {
		name        string
		bigram      bool
		gate, stops bool
	}
	mixes := []mix{{"the context model", false, false, false}, {"the context model, gated", false, true, false},
		{"bigram and unigram", true, false, false}, {"the context model, 43 stop words out", false, false, true}}
	best, bestTune := "", -1.0
	for _, m := range mixes {
		for _, lam := range []float64{0.5, 0.4, 0.3, 0.2, 0.1, 0} {
			for _, mo := range []int{1, 3, 5, 10} {
				p := defaultParams
				p.wordsLambda, p.wordMinObs, p.wordsBigram, p.wordsGate = lam, mo, m.bigram, m.gate
				ss := sampleSessions(t)
				if m.stops {
					ss = stopped
				}
				r := evaluateFolds(ss, folds[m.stops], &p)
				name := fmt.Sprintf("%s, λ %.1f, from %d", m.name, lam, mo)
				tune := r.Tuning.MessageTop1 + r.Tuning.MessageTop3
				t.Logf("%-52s tuning %.4f / %.4f = %.4f  (report %.4f / %.4f)", name, r.Tuning.MessageTop1, r.Tuning.MessageTop3, tune, r.Held.MessageTop1, r.Held.MessageTop3)
				if tune > bestTune+1e-12 {
					best, bestTune = name, tune
				}
			}
		}
	}
	if want := fmt.Sprintf("the context model, λ %.1f, from %d", WordsLambda, WordMinObservations); best != want {
		t.Errorf("best on the tuning half: %s, shipped: %s", best, want)
	}
	r, err := evaluate(sampleSessions(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]Accuracy{"tuning": r.Tuning, "report": r.Held, "tuning with context": r.TuningWithContext, "report with context": r.HeldWithContext} {
		if a.MessageTop1 < a.BaselineBigramTop1 || a.MessageTop3 < a.BaselineBigramTop3 {
			t.Errorf("%s: with the message %.4f / %.4f, below bigram %.4f / %.4f", name, a.MessageTop1, a.MessageTop3, a.BaselineBigramTop1, a.BaselineBigramTop3)
		}
	}
}

// stopWords are the 43 English function words of TestWordsChoice's
// variant (as many as the first experiment's list, README "Next-tool
// prediction").
var stopWords = strings.Fields(`the and for you that this with are have can was but not
	your from has had its his her they them their what which who will would could should
	there here then than also just all any some our out get got`)

// withoutStopWords returns ss with stopWords left out of every call's
// words.
func withoutStopWords(ss []session) []session {
	out := make([]session, len(ss))
	for i, s := range ss {
		out[i] = session{task: s.task, calls: make([]call, len(s.calls))}
		for j, c := range s.calls {
			c.Words = slices.DeleteFunc(slices.Clone(c.Words), func(w string) bool { return slices.Contains(stopWords, w) })
			out[i].calls[j] = c
		}
	}
	return out
}

// foldsOf learns the leave-one-task-out folds of each domain, once for
// every variant a choice compares.
func foldsOf(t *testing.T, domains ...[]session) [][]fold {
	t.Helper()
	out := make([][]fold, len(domains))
	for i, d := range domains {
		fs, err := learnFolds(d)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = fs
	}
	return out
}

// TestWordsWeightingChoice recomputes the choice not to weigh the words
// (README "Next-tool prediction", a rare word's evidence against a common
// one's), on the tuning half of tau-bench only, by the sum of top-1 and
// top-3 of NextAfterMessage; the report half is logged, never compared.
// Variants: each word's shares shrunk towards the context model with a
// prior weight β (a word seen once no longer gives its one successor a
// share of 1), the words weighted by their count after the context tool
// (c^γ, γ < 0 favours rare words) or by how peaked their shares are. A
// variant replaces the shipped equal mean only if it wins by more than
// two of the 577 predictions (0.0035): less is one call either way.
func TestWordsWeightingChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("fifteen variants of the leave-one-task-out evaluation")
	}
	choiceTest(t)
	t.Parallel()
	folds := foldsOf(t, sampleSessions(t))[0]
	type variant struct {
		name   string
		beta   float64
		weight wordWeight
		gamma  float64
	}
	vs := []variant{{name: "equal mean (shipped)"}}
	for _, b := range []float64{0.25, 1, 4, 16} {
		vs = append(vs, variant{name: fmt.Sprintf("shrunk, β %g", b), beta: b})
	}
	for _, g := range []float64{-1, -0.5, -0.25, 0.25, 0.5, 1} {
		vs = append(vs, variant{name: fmt.Sprintf("by count, γ %g", g), weight: wordsByCount, gamma: g})
	}
	for _, g := range []float64{0.5, 1, 2, 4} {
		vs = append(vs, variant{name: fmt.Sprintf("by peak share, γ %g", g), weight: wordsByPeak, gamma: g})
	}
	shipped := -1.0
	for _, v := range vs {
		p := defaultParams
		p.wordsPrior, p.wordsWeight, p.wordsGamma = v.beta, v.weight, v.gamma
		r := evaluateFolds(sampleSessions(t), folds, &p)
		tune := r.Tuning.MessageTop1 + r.Tuning.MessageTop3
		t.Logf("%-24s tuning %.4f / %.4f = %.4f  (report %.4f / %.4f)", v.name, r.Tuning.MessageTop1, r.Tuning.MessageTop3, tune, r.Held.MessageTop1, r.Held.MessageTop3)
		if shipped < 0 {
			shipped = tune
			continue
		}
		if tune > shipped+0.0035 {
			t.Errorf("%s: %.4f on the tuning half, more than two predictions above the shipped equal mean (%.4f)", v.name, tune, shipped)
		}
	}
}
