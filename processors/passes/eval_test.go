package passes_test

import (
	"encoding/json"
	"testing"

	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/passes"
)

// The success curve rebuilt from the projections equals the log's own
// trial summaries (32, 42, 48, 50, 51 correct with reflections; 34 each
// trial without), and the evaluator agrees with the log on every pass.
func TestReflexionCurvesFromTheProjection(t *testing.T) {
	want := map[string][]int{reflexion.RunReflexion: {32, 42, 48, 50, 51}, reflexion.RunBase: {34, 34, 34, 34, 34}}
	if raceDetector { // the base run's curve is TestEval's to check (cmd/chronicle)
		delete(want, reflexion.RunBase)
	}
	for name, curve := range want {
		run, err := reflexion.Bundled(name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := passes.EvaluateReflexion(run, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		t.Logf("%s", b)
		for i := range curve {
			if rep.SuccessCurve[i] != curve[i] || rep.LogCurve[i] != curve[i] {
				t.Errorf("%s: success curve %v, log %v, want %v", name, rep.SuccessCurve, rep.LogCurve, curve)
				break
			}
		}
		if rep.Questions != 100 || rep.Agreement != 1 {
			t.Errorf("%s: %d questions, agreement %.3f", name, rep.Questions, rep.Agreement)
		}
	}
}
