// Package game24test serves GPT-4's recorded Tree of Thoughts output as
// an OpenAI-compatible chat endpoint, for tests of the LLM proposer and
// evaluator (game24.LLM) and of the commands that drive them.
package game24test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// RecordedServer is an OpenAI-compatible chat endpoint that answers with
// GPT-4's recorded Tree of Thoughts output: for a proposal prompt the
// proposal lines GPT-4 wrote for that state, for a value prompt one of
// the verdicts (sure / likely / impossible) whose sum is the logged value
// (the n-th call for a candidate gets the n-th verdict; a sample whose
// verdict the log does not hold gets NoVerdict, an answer without a
// verdict word, which counts 0 as the logged sample did). A prompt without
// the goal-pinned objective is a 400, a state outside the recorded tree a
// 404. The returned function gives the prompts received so far. The
// server is closed when the test ends.
func RecordedServer(t testing.TB, rec *game24.Recorded) (*httptest.Server, func() []string) {
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
			if vs := Verdicts(v); k < len(vs) {
				answer = vs[k]
			} else {
				// a sample ToT counted 0: GPT-4's answer ended in no
				// verdict word (an empty answer is a failed call)
				answer = NoVerdict
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
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), prompts...)
	}
}

// NoVerdict is the answer to a value sample the log holds no verdict for.
const NoVerdict = "The numbers left cannot be judged from this step alone."

// Verdicts decodes a logged value (sure 20, likely 1, impossible 0.001
// per sample) into its verdict words.
func Verdicts(v float64) []string {
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
