package flux_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

// TestAgreementWithTauBench evaluates all 200 real GPT-4o airline sessions
// from the events the importer produces and compares the evaluator's
// verdict (meets_criteria) and the plain canonical-JSON baseline with
// tau-bench's reward.
func TestAgreementWithTauBench(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := flux.Verdicts(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 200 {
		t.Fatalf("%d verdicts", len(vs))
	}
	var agree, base int
	for i := range vs {
		v := &vs[i]
		validEvaluationFor(t, v.SessionID, v.Evaluation)
		if v.Baseline == v.Success() {
			base++
		}
		if v.Evaluator == v.Success() {
			agree++
			continue
		}
		t.Logf("disagreement %s: reward %v, %s (composite %v)", v.SessionID, v.Reward, v.Evaluation.Recommendation, v.Evaluation.Composite)
		// Every disagreement is a session tau-bench cut off at its step
		// limit (30 agent turns) before computing a reward: reward_info is
		// null and the reward stayed at its initial 0, whatever the database.
		rec := recs[i]
		var turns int
		for _, m := range rec.Traj {
			if m.Role == "assistant" {
				turns++
			}
		}
		if string(rec.Info.RewardInfo) != "null" || turns != 30 {
			t.Errorf("%s: unexplained disagreement (reward_info %.40s, %d assistant turns)", v.SessionID, rec.Info.RewardInfo, turns)
		}
	}
	evaluator, baseline, err := flux.Agreement(recs)
	if err != nil {
		t.Fatal(err)
	}
	if evaluator != float64(agree)/200 || baseline != float64(base)/200 {
		t.Errorf("Agreement = %v, %v; counted %d, %d", evaluator, baseline, agree, base)
	}
	t.Logf("agreement with tau-bench reward: evaluator %.1f%% (%d/200), canonical-JSON baseline %.1f%% (%d/200)",
		100*evaluator, agree, 100*baseline, base)
	if math.Floor(100*evaluator) < 99 {
		t.Errorf("evaluator agreement %.1f%%, want ≥ 99%%", 100*evaluator)
	}
	if math.Floor(100*baseline) != 77 {
		t.Errorf("baseline agreement %.1f%%, want 77%%", 100*baseline)
	}
	if evaluator <= baseline {
		t.Errorf("evaluator (%v) does not beat the baseline (%v)", evaluator, baseline)
	}
}

func validEvaluationFor(t *testing.T, sid string, d events.EvaluationData) {
	t.Helper()
	env, err := events.New(events.EvaluationCompleted, "chronicle/flux", sid+"#eval", testTime, d)
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = sid
	if err := events.Validate(&env); err != nil {
		t.Fatalf("%s: evaluation does not validate: %v", sid, err)
	}
}

// TestEvaluatorIgnoresReward: flipping the producer's outcome and reward
// changes nothing, because InputFromEvents never passes them on.
func TestEvaluatorIgnoresReward(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs[:8] {
		envs, err := taubench.Events(rec)
		if err != nil {
			t.Fatal(err)
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			t.Fatal(err)
		}
		last := &envs[len(envs)-1]
		var done events.SessionCompletedData
		if err := last.Decode(&done); err != nil {
			t.Fatal(err)
		}
		flipped := 1 - *done.Reward
		done.Reward = &flipped
		done.Outcome = map[string]string{events.OutcomeSuccess: events.OutcomeFailure, events.OutcomeFailure: events.OutcomeSuccess}[done.Outcome]
		last.Data, _ = json.Marshal(done)
		in2, err := flux.InputFromEvents(envs)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(flux.Evaluate(in))
		b, _ := json.Marshal(flux.Evaluate(in2))
		if string(a) != string(b) {
			t.Errorf("%s: evaluation depends on the reward", in.SessionID)
		}
		if in.SessionID != taubench.SessionID(rec.TaskID, rec.Trial) || in.Task != rec.Info.Task.Instruction ||
			len(in.Minutes) != len(rec.Traj) || len(in.Criteria) == 0 || in.Output != done.Output {
			t.Errorf("input of %s: %d minutes, %d criteria", in.SessionID, len(in.Minutes), len(in.Criteria))
		}
	}
}

func TestInputFromEventsMixedSessions(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := taubench.Events(recs[0])
	b, _ := taubench.Events(recs[1])
	if _, err := flux.InputFromEvents(append(a[:2:2], b[0])); err == nil {
		t.Error("events of two sessions accepted")
	}
	if _, _, err := flux.Agreement(nil); err == nil {
		t.Error("Agreement of no records gave no error")
	}
}
