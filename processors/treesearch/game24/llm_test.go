package game24_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// recordedServer is an OpenAI-compatible chat endpoint that answers with
// GPT-4's recorded Tree of Thoughts output: for a proposal prompt the
// proposal lines GPT-4 wrote for that state, for a value prompt one of
// the verdicts (sure / likely / impossible) whose sum is the logged value
// (the n-th call for a candidate gets the n-th verdict; a sample whose
// verdict the log does not hold gets an empty answer).
func recordedServer(t *testing.T, rec *game24.Recorded) (*httptest.Server, *[]string) {
	goalRe := regexp.MustCompile(`^Primary Objective: Use the numbers (.*) and basic arithmetic`)
	var mu sync.Mutex
	calls := map[string]int{}
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Temperature float64 `json:"temperature"`
			Messages    []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 1 || req.Temperature != 0 {
			http.Error(w, "bad request", 400)
			return
		}
		prompt := req.Messages[0].Content
		mu.Lock()
		prompts = append(prompts, prompt)
		mu.Unlock()
		m := goalRe.FindStringSubmatch(prompt)
		if m == nil {
			http.Error(w, "no objective", 400)
			return
		}
		_, rest, _ := strings.Cut(prompt, "Steps so far:\n")
		steps, rest, _ := strings.Cut(rest, "\nCandidate next step:\n")
		if !strings.Contains(prompt, "Candidate next step:") {
			steps, _, _ = strings.Cut(steps, "\nInput: ")
			steps, _, _ = strings.Cut(steps, "\nOnly 24 is left")
		}
		path := []treesearch.Step{{NodeID: "r", State: m[1]}}
		for _, l := range strings.Split(steps, "\n") {
			if l == "" {
				continue
			}
			state, _, _ := game24.Next(path, l+"\n")
			path = append(path, treesearch.Step{Candidate: l + "\n", State: state, Depth: len(path)})
		}
		answer := ""
		if cand, _, ok := strings.Cut(rest, "\nEvaluate if"); ok && strings.Contains(prompt, "Candidate next step:") {
			v, ok, _ := rec.Value(path, cand+"\n")
			if !ok {
				http.Error(w, "no recorded value", 404)
				return
			}
			mu.Lock()
			k := calls[steps+"|"+cand]
			calls[steps+"|"+cand]++
			mu.Unlock()
			if vs := verdicts(v); k < len(vs) {
				answer = vs[k]
			}
		} else {
			lines, ok, _ := rec.Proposals(path)
			if !ok {
				http.Error(w, "no recorded proposals", 404)
				return
			}
			answer = strings.Join(lines, "")
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv, &prompts
}

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

// verdicts decodes a logged value (sure 20, likely 1, impossible 0.001
// per sample) into its verdict words.
func verdicts(v float64) []string {
	i := int(math.Round((v - math.Floor(v)) * 1000))
	rest := int(math.Round(v - float64(i)*0.001))
	s, l := rest/20, rest%20
	var out []string
	for range s {
		out = append(out, "sure")
	}
	for range l {
		out = append(out, "likely")
	}
	for range i {
		out = append(out, "impossible")
	}
	return out
}

// The LLM proposer and evaluator, talking to an OpenAI-compatible server
// that answers with GPT-4's recorded output, search exactly as the recorded
// components do: same outcome, answer, expansions and nodes; every prompt
// is goal-pinned and sent at temperature 0.
func TestLLMComponentsOnRecordedOutput(t *testing.T) {
	rec := &game24.Recorded{}
	srv, prompts := recordedServer(t, rec)
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
	for _, p := range *prompts {
		if !strings.HasPrefix(p, "Primary Objective: ") {
			t.Fatalf("prompt not goal-pinned: %.200s", p)
		}
	}
	if len(*prompts) == 0 {
		t.Fatal("no model call")
	}
}
