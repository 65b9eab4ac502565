package game24

import (
	"context"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// ToTLog replays one Tree of Thoughts run as a search, for `chronicle
// import tot`: a node's state is its trajectory (ToT's y), its proposals
// the new_ys ToT generated from it, its score the value GPT-4 gave (value /
// 60), with no dedup beyond identical trajectories and no checks of ours
// (ToT had none); an answer is a goal when it passes the objective check
// (ToT's test_output). Searched with a level-wise beam of W = 5 and g =
// depth (cost_per_step 1, more than any h), the search expands level by
// level and keeps the 5 best children of each level by value, ties in
// generation order, as ToT's breadth-first search did with its stable sort
// (the import counts the levels whose expanded nodes match ToT's).
type ToTLog struct {
	Run    ToTRun
	Puzzle string
	kids   map[string][]string     // y → its new_ys, in order
	values map[string]float64      // new_y → value
	Steps  map[int]map[string]bool // depth → the ys ToT kept (select_new_ys)
}

// NewToTLog indexes run.
func NewToTLog(run ToTRun) (*ToTLog, error) {
	if len(run.Steps) == 0 {
		// named by its "idx" field, as the log spells it: "run 900"
		// beside the import's "search tot-901" read as two runs (a
		// walkthrough, 2026-12-05)
		return nil, fmt.Errorf("game24: the tree of thoughts run with idx %d has no steps (its \"steps\" is empty or missing)", run.Idx)
	}
	nums, err := ParseState(run.Steps[0].X)
	if err != nil {
		return nil, fmt.Errorf("game24: the tree of thoughts run with idx %d: steps[0].x: %w", run.Idx, err)
	}
	l := &ToTLog{Run: run, Puzzle: State(nums), kids: map[string][]string{}, values: map[string]float64{}, Steps: map[int]map[string]bool{}}
	for _, st := range run.Steps {
		for i, ny := range st.NewYs {
			if _, ok := l.values[ny]; !ok && i < len(st.Values) {
				l.values[ny] = st.Values[i]
			}
		}
		for _, y := range st.Ys {
			if _, done := l.kids[y]; done {
				continue
			}
			var ks []string
			for _, ny := range st.NewYs {
				if strings.HasPrefix(ny, y) && ny != y {
					ks = append(ks, ny)
				}
			}
			l.kids[y] = ks
		}
		sel := map[string]bool{}
		for _, y := range st.SelectNewYs {
			sel[y] = true
		}
		l.Steps[st.Step+1] = sel
	}
	return l, nil
}

// Component implements treesearch.Proposer and treesearch.Evaluator.
func (*ToTLog) Component() events.SearchComponent {
	return events.SearchComponent{Name: "tot-log-replay", Version: "1"}
}

// Propose implements treesearch.Proposer.
func (l *ToTLog) Propose(_ context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	y := req.Path[len(req.Path)-1].State
	ks, ok := l.kids[y]
	if !ok {
		return treesearch.Proposal{Unexpandable: true}, treesearch.ErrUnknownState
	}
	var out treesearch.Proposal
	for _, ny := range ks {
		out.Candidates = append(out.Candidates, treesearch.Candidate{Text: strings.TrimPrefix(ny, y), State: ny})
		out.Raw += strings.TrimPrefix(ny, y)
	}
	return out, nil
}

// Check implements treesearch.Evaluator: ToT checked nothing.
func (*ToTLog) Check(treesearch.EvalRequest) (string, string) { return "", "" }

// Evaluate implements treesearch.Evaluator.
func (l *ToTLog) Evaluate(_ context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, ok := l.values[req.Candidate.State]
	if !ok {
		return treesearch.Verdict{}, treesearch.ErrUnknownState
	}
	goal := false
	if expr, isAnswer := ParseAnswer(strings.TrimSpace(req.Candidate.Text)); isAnswer {
		goal = CheckAnswer(l.Puzzle, expr) == ""
	}
	return treesearch.Verdict{Score: min(v/MaxValue, 1), Goal: goal, Report: fmt.Sprintf("GPT-4 value %g", v)}, nil
}

// ToTConfig is the configuration that makes Beam-A* expand as ToT's
// breadth-first search (b = 5) did, for `chronicle import tot`.
func ToTConfig(run ToTRun) events.SearchConfig {
	exp := 0
	for _, st := range run.Steps {
		exp += len(st.Ys)
	}
	return events.SearchConfig{BeamWidth: 5, BeamPerDepth: true, K: 64, MaxDepth: len(run.Steps), MaxExpansions: exp, CostPerStep: 1}
}
