package game24

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// Goal is the objective of a puzzle, pinned at the top of every prompt.
func Goal(puzzle string) string {
	return "Use the numbers " + puzzle + " and basic arithmetic operations (+ - * /) to obtain 24, each number exactly once."
}

// Config is the default search configuration for a Game of 24 puzzle: at
// most 3 steps and the answer (max depth 4), k = 48 (the exhaustive
// arithmetic proposer generates at most 36 candidates; GPT-4's recorded
// proposals number up to 46 per state), g = 0.05 per step.
func Config(beam int) events.SearchConfig {
	return events.SearchConfig{BeamWidth: beam, K: 48, MaxDepth: 4, MaxExpansions: 200, CostPerStep: 0.05}
}

// puzzleOf is the puzzle of a search: its root state.
func puzzleOf(path []treesearch.Step) string { return path[0].State }

// Next computes the state a candidate step leads to from the last node of
// path and runs the objective checks: the pre-filter (the line is a step
// "a op b = c (left: …)" or "Answer: <expression> = 24") and the hard
// checks (the operands are numbers left, the arithmetic is exact, the
// numbers left are right, the last number is 24; the answer uses each of
// the puzzle's numbers once and equals 24). reason is "" when every check
// passes, else events.PrunedPrefilter or events.PrunedHardCheck.
func Next(path []treesearch.Step, text string) (state, reason, report string) {
	line := strings.TrimSpace(text)
	invalid := "invalid: " + line
	if line == "" {
		return invalid, events.PrunedPrefilter, "empty candidate"
	}
	if expr, ok := ParseAnswer(line); ok {
		if why := CheckAnswer(puzzleOf(path), expr); why != "" {
			return AnswerState(expr), events.PrunedHardCheck, why
		}
		return AnswerState(expr), "", ""
	}
	st, ok := ParseStep(line)
	if !ok {
		return invalid, events.PrunedPrefilter, `not a step "a op b = c (left: …)" nor "Answer: <expression> = 24"`
	}
	if strings.HasPrefix(path[len(path)-1].State, "answer:") {
		return invalid, events.PrunedHardCheck, "a step after the answer"
	}
	next, why := CheckStep(path[len(path)-1].State, st)
	if why != "" {
		return invalid, events.PrunedHardCheck, why
	}
	if next == "24" {
		// 24 is left: the state is the expression that got there, so
		// different ways to 24 (different answers) stay different states
		expr, err := Expression(append(path[:len(path):len(path)], treesearch.Step{Candidate: text}))
		if err != nil {
			return invalid, events.PrunedHardCheck, err.Error()
		}
		return ReachedState(expr), "", ""
	}
	return next, "", ""
}

// ReachedState is the state of a path that left only 24, reached by expr.
func ReachedState(expr string) string { return "24 = " + expr }

// reached returns the expression of a state that left only 24.
func reached(state string) (string, bool) { return strings.CutPrefix(state, "24 = ") }

// check implements treesearch.Evaluator.Check for both evaluators.
func check(req treesearch.EvalRequest) (string, string) {
	_, reason, report := Next(req.Path, req.Candidate.Text)
	return reason, report
}

// Arithmetic is the built-in exhaustive proposer and objective evaluator.
// Proposer: every pair of the numbers left × the six results a+b, a×b,
// a−b, b−a, a/b, b/a (exact; no division by zero), and the answer
// expression once the last number is 24. Evaluator: score 1 when 24 can
// still be reached from the numbers left (exhaustive search), else 0; the
// answer is a goal.
type Arithmetic struct{}

// Component implements treesearch.Proposer and treesearch.Evaluator.
func (Arithmetic) Component() events.SearchComponent {
	return events.SearchComponent{Name: "game24-arithmetic", Version: "1"}
}

// Propose implements treesearch.Proposer.
func (Arithmetic) Propose(_ context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	last := req.Path[len(req.Path)-1]
	if strings.HasPrefix(last.State, "answer:") {
		return treesearch.Proposal{}, nil
	}
	var out treesearch.Proposal
	if expr, ok := reached(last.State); ok {
		text := "Answer: " + expr + " = 24\n"
		out.Candidates = append(out.Candidates, treesearch.Candidate{Text: text, State: AnswerState(expr)})
		out.Raw = text
		return out, nil
	}
	nums, err := ParseState(last.State)
	if err != nil || len(nums) < 2 {
		return out, err
	}
	var raw strings.Builder
	for i := range nums {
		for j := i + 1; j < len(nums); j++ {
			rest := make([]*big.Rat, 0, len(nums)-1)
			for k := range nums {
				if k != i && k != j {
					rest = append(rest, nums[k])
				}
			}
			for _, m := range moves(nums[i], nums[j]) {
				after := State(append(append([]*big.Rat{}, rest...), m.c))
				text := fmt.Sprintf("%s %s %s = %s (left: %s)\n", Format(m.a), m.op, Format(m.b), Format(m.c), after)
				if after == "24" {
					after, _, _ = Next(req.Path, text)
				}
				out.Candidates = append(out.Candidates, treesearch.Candidate{Text: text, State: after})
				raw.WriteString(text)
			}
		}
	}
	out.Raw = raw.String()
	return out, nil
}

// Expression rebuilds the expression of a path whose steps end with 24
// left: each step's operands are matched to the first number of equal
// value left (any match gives a correct expression: equal values are
// interchangeable).
func Expression(path []treesearch.Step) (string, error) {
	nums, err := ParseState(path[0].State)
	if err != nil {
		return "", err
	}
	type term struct {
		v    *big.Rat
		expr string
	}
	terms := make([]term, len(nums))
	for i, n := range nums {
		terms[i] = term{n, Format(n)}
	}
	take := func(v *big.Rat) (term, bool) {
		for i, t := range terms {
			if t.v.Cmp(v) == 0 {
				terms = append(terms[:i:i], terms[i+1:]...)
				return t, true
			}
		}
		return term{}, false
	}
	for _, s := range path[1:] {
		st, ok := ParseStep(s.Candidate)
		if !ok {
			return "", fmt.Errorf("game24: %q is not a step", s.Candidate)
		}
		a, ok1 := take(st.A)
		b, ok2 := take(st.B)
		if !ok1 || !ok2 {
			return "", fmt.Errorf("game24: %q uses numbers not left", s.Candidate)
		}
		terms = append(terms, term{st.C, "(" + a.expr + " " + st.Op + " " + b.expr + ")"})
	}
	if len(terms) != 1 {
		return "", fmt.Errorf("game24: %d numbers left", len(terms))
	}
	e := terms[0].expr
	if strings.HasPrefix(e, "(") && strings.HasSuffix(e, ")") {
		e = e[1 : len(e)-1]
	}
	return e, nil
}

// Check implements treesearch.Evaluator.
func (Arithmetic) Check(req treesearch.EvalRequest) (string, string) { return check(req) }

// Evaluate implements treesearch.Evaluator.
func (Arithmetic) Evaluate(_ context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	state, _, _ := Next(req.Path, req.Candidate.Text)
	if strings.HasPrefix(state, "answer:") {
		return treesearch.Verdict{Score: 1, Goal: true, Report: "uses each number once and equals 24"}, nil
	}
	if _, ok := reached(state); ok {
		return treesearch.Verdict{Score: 1, Report: "24 is left"}, nil
	}
	nums, err := ParseState(state)
	if err != nil {
		return treesearch.Verdict{}, err
	}
	if Solvable(nums) {
		return treesearch.Verdict{Score: 1, Report: "24 is reachable from " + state}, nil
	}
	return treesearch.Verdict{Score: 0, Report: "24 is unreachable from " + state}, nil
}

// Components returns the built-in proposer and evaluator of a component
// name as a search records it (search.started.v1), for `chronicle solver
// lock`; ok is false for another name.
func Components(name string) (treesearch.Proposer, treesearch.Evaluator, bool) {
	switch name {
	case Arithmetic{}.Component().Name:
		return Arithmetic{}, Arithmetic{}, true
	case (&Recorded{}).Component().Name:
		r := &Recorded{}
		return r, r, true
	}
	return nil, nil, false
}

// CheckState says why the built-in components cannot expand state: it is
// no state of a Game of 24 search (ParseState's error: more than four
// numbers, or a field that is no number), nil when it is one ("24 = …" and
// "answer: …" included). POST /v1/searches/{id}/resume asks it of a
// built-in search's root and open nodes before the resume worker drives
// the search, so a forged search is refused there (422) instead of
// failing in the worker after a 202.
func CheckState(state string) error {
	if strings.HasPrefix(state, "answer:") {
		return nil
	}
	if _, ok := reached(state); ok {
		return nil
	}
	_, err := ParseState(state)
	return err
}

// Builtin is a treesearch.ComponentsFunc for the resume worker: the
// built-in proposer and evaluator (arithmetic, or GPT-4's recorded Tree of
// Thoughts answers) when a search recorded the same one as both, with the
// version this build has; ok is false otherwise (an LLM or another
// component needs its own driver).
func Builtin(proposer, evaluator events.SearchComponent) (treesearch.Proposer, treesearch.Evaluator, bool) {
	if proposer != evaluator {
		return nil, nil, false
	}
	p, e, ok := Components(proposer.Name)
	if !ok || p.Component() != proposer || e.Component() != evaluator {
		return nil, nil, false
	}
	return p, e, true
}
