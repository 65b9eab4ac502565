package game24_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// A model answer above MaxAnswerBytes is refused, naming its size and the
// limit, before anything counts its tokens or logs it (a 400 KB answer
// without whitespace kept the tokenizer busy for minutes, and one too
// large for an event aborted the search naming neither: an LLM-endpoint
// walkthrough, 2026-12-03). The recorded answers are far below it.
func TestOversizedModelAnswerIsRefused(t *testing.T) {
	big := strings.Repeat("y", game24.MaxAnswerBytes+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%q}}]}`, big)
	}))
	defer srv.Close()
	client, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "verbose", RatePerSecond: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	llm := &game24.LLM{Client: client, Samples: 1}
	path := []treesearch.Step{{NodeID: "r", State: "4 5 6 10"}}
	start := time.Now()
	_, err = llm.Propose(context.Background(), treesearch.ProposeRequest{Goal: game24.Goal("4 5 6 10"), Path: path})
	if err == nil || !strings.Contains(err.Error(), "game24.MaxAnswerBytes") {
		t.Fatalf("propose: %v, want a refusal naming MaxAnswerBytes", err)
	}
	_, err = llm.Evaluate(context.Background(), treesearch.EvalRequest{Goal: game24.Goal("4 5 6 10"), Path: path, Candidate: treesearch.Candidate{Text: "4 + 5 = 9 (left: 6 9 10)\n", State: "6 9 10"}})
	if err == nil || !strings.Contains(err.Error(), "game24.MaxAnswerBytes") {
		t.Fatalf("value: %v, want a refusal naming MaxAnswerBytes", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %v", d)
	}
}
