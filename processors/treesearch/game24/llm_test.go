package game24_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24/game24test"
)

// inTree asks the model only about states of the recorded tree: the test
// server has no recorded output for others (the recorded proposer calls
// them unexpandable).
type inTree struct {
	*game24.LLM
	rec *game24.Recorded
}

func (l *inTree) Propose(ctx context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	if _, ok, _ := l.rec.Proposals(req.Path); !ok {
		return treesearch.Proposal{Unexpandable: true}, treesearch.ErrUnknownState
	}
	return l.LLM.Propose(ctx, req)
}

// The LLM proposer and evaluator, talking to an OpenAI-compatible server
// that answers with GPT-4's recorded output, search exactly as the recorded
// components do: same outcome, answer, expansions and nodes; every prompt
// is goal-pinned and sent at temperature 0.
func TestLLMComponentsOnRecordedOutput(t *testing.T) {
	rec := &game24.Recorded{}
	srv, prompts := game24test.RecordedServer(t, rec)
	client, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "gpt-4-recorded", RatePerSecond: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	llm := &inTree{LLM: &game24.LLM{Client: client}, rec: rec}
	ctx := context.Background()
	for _, puzzle := range []string{"4 5 6 10", "1 2 4 7"} {
		want, err := treesearch.BreadthFirst(ctx, game24.Goal(puzzle), puzzle, 4, 48, rec, rec, func(c treesearch.Candidate) bool { return strings.HasPrefix(c.State, "answer:") })
		if err != nil {
			t.Fatal(err)
		}
		got, err := treesearch.BreadthFirst(ctx, game24.Goal(puzzle), puzzle, 4, 48, llm, llm, func(c treesearch.Candidate) bool { return strings.HasPrefix(c.State, "answer:") })
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: LLM breadth-first %+v, recorded %+v", puzzle, got, want)
		}
		// evaluation: the LLM's summed verdicts equal the logged value
		path := []treesearch.Step{{NodeID: "r", State: puzzle}}
		lines, _, _ := rec.Proposals(path)
		tk, _ := treesearch.CL100K()
		for _, l := range lines[:3] {
			state, reason, _ := game24.Next(path, l)
			if reason != "" {
				continue
			}
			req := treesearch.EvalRequest{Goal: game24.Goal(puzzle), Path: path, Candidate: treesearch.Candidate{Text: l, State: state}}
			req.Prompt = treesearch.PinGoal(req.Goal) + "Steps so far:\n" + treesearch.PathSummary(tk, path, treesearch.PathSummaryTokens) + "\nCandidate next step:\n" + l
			v, err := llm.Evaluate(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			rv, _ := rec.Evaluate(ctx, req)
			if math.Abs(v.Score-rv.Score) > 1e-9 {
				t.Fatalf("%q: LLM score %v, recorded %v", l, v.Score, rv.Score)
			}
		}
	}
	for _, p := range prompts() {
		if !strings.HasPrefix(p, "Primary Objective: ") {
			t.Fatalf("prompt not goal-pinned: %.200s", p)
		}
	}
	if len(prompts()) == 0 {
		t.Fatal("no model call")
	}
}
