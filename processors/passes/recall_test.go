package passes_test

import (
	"encoding/json"
	"testing"

	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Reflection memories are found by memory_search with their question:
// every measured share is a share and the two halves split the questions
// with reflections. On 30 questions with reflections (embedding all of
// them is TestEval's job, in cmd/chronicle), to keep -race runs short.
func TestReflectionRecall(t *testing.T) {
	emb, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	run, err := reflexion.Bundled(reflexion.RunReflexion)
	if err != nil {
		t.Fatal(err)
	}
	keep, n := map[string]bool{}, 30
	if raceDetector {
		n = 10
	}
	for _, q := range reflexion.Questions(run, reflexion.RunReflexion) {
		if last := q.Agents[len(q.Agents)-1]; len(last.Reflections) > 0 && len(keep) < n {
			keep[q.Text] = true
		}
	}
	for i := range run.Trials {
		var agents []reflexion.Agent
		for _, a := range run.Trials[i].Agents {
			if keep[reflexion.QuestionText(a.Question)] {
				agents = append(agents, a)
			}
		}
		run.Trials[i].Agents = agents
	}
	rep, err := passes.EvaluateReflexion(run, reflexion.RunReflexion, emb)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Reflections
	b, _ := json.Marshal(rr)
	t.Logf("%s", b)
	if rr == nil || rr.Memories == 0 || rr.TuneCases+rr.ReportCases != rr.QuestionsAll || rr.QuestionsAll == 0 {
		t.Fatalf("reflection recall %+v", rr)
	}
	for _, x := range []float64{rr.Model, rr.Lexical, rr.Tuned, rr.TunedOnTune, rr.ModelAll, rr.LexicalAll} {
		if x < 0 || x > 1 {
			t.Fatalf("share out of range: %+v", rr)
		}
	}
	// every question with reflections is found by its own words at least
	// sometimes: recall far from zero
	if rr.LexicalAll < 0.3 {
		t.Fatalf("BM25 recall@3 %.3f", rr.LexicalAll)
	}
}
