package passes_test

import (
	"encoding/json"
	"testing"

	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Reflection memories are found by memory_search with their question:
// every measured share is a share, the tuned alpha is on the grid, and the
// two halves split the questions with reflections.
func TestReflectionRecall(t *testing.T) {
	emb, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	run, err := reflexion.Bundled(reflexion.RunReflexion)
	if err != nil {
		t.Fatal(err)
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
