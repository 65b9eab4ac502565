package passes_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
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

// The importer's claim is the agent's own (it called Finish with an
// answer): a pass Chronicle judges converged is never flagged
// CLAIM_DISAGREES, a halted pass claims nothing and is not judged
// converged either, and the flag marks exactly the finished passes whose
// answer the thresholds reject. Before, the importer claimed converged:
// false on every pass, so every converged pass was flagged (a
// walkthrough found all 109 of the first 40 tasks' converged passes so).
func TestReflexionClaimIsTheAgentsFinish(t *testing.T) {
	for _, name := range []string{reflexion.RunReflexion, reflexion.RunBase} {
		run, err := reflexion.Bundled(name)
		if err != nil {
			t.Fatal(err)
		}
		envs, err := reflexion.Events(run, name)
		if err != nil {
			t.Fatal(err)
		}
		var n, converged, finished, disagree int
		for i := range envs {
			if envs[i].Type != events.ReasoningPassCompleted {
				continue
			}
			var d events.ReasoningPassData
			if err := envs[i].Decode(&d); err != nil {
				t.Fatal(err)
			}
			v := passes.Judge(d.Convergence, d.Status, d.TTLRemaining == 0, d.ValidationIssues)
			n++
			fin := d.Status == events.PassCompleted
			flagged := slices.Contains(v.ReasonCodes, passes.ReasonClaimDisagrees)
			if v.Claimed != fin {
				t.Errorf("%s %s pass %d: claimed %v, finished %v", name, d.TaskID, d.PassNumber, v.Claimed, fin)
			}
			if v.Converged && flagged {
				t.Errorf("%s %s pass %d: converged and %v", name, d.TaskID, d.PassNumber, v.ReasonCodes)
			}
			if flagged != (fin && !v.Converged) {
				t.Errorf("%s %s pass %d: finished %v, converged %v, codes %v", name, d.TaskID, d.PassNumber, fin, v.Converged, v.ReasonCodes)
			}
			if v.Converged {
				converged++
			}
			if fin {
				finished++
			}
			if flagged {
				disagree++
			}
		}
		t.Logf("%s: %d passes, %d finished, %d converged, %d CLAIM_DISAGREES", name, n, finished, converged, disagree)
	}
}
