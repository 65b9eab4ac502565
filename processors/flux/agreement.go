package flux

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// Verdict compares, for one tau-bench session, the evaluator's and the
// baseline's prediction with tau-bench's reward.
type Verdict struct {
	// SessionID is the imported session id.
	SessionID string
	// Reward is tau-bench's reward (1 success, 0 failure).
	Reward float64
	// Evaluation is what Evaluate returned.
	Evaluation events.EvaluationData
	// Evaluator is the evaluator's prediction: recommendation meets_criteria.
	Evaluator bool
	// Baseline is the plain canonical-JSON prediction: every ground-truth
	// action appears among the agent's tool calls (successful or not) with
	// identical canonical JSON arguments.
	Baseline bool
}

// Success reports whether tau-bench rewarded the session.
func (v *Verdict) Success() bool { return v.Reward == 1 }

// Verdicts imports each record with taubench.Events, rebuilds the Input a
// consumer would (InputFromEvents, which never passes on the reward),
// evaluates it, and computes the baseline from the same calls.
func Verdicts(recs []taubench.Record) ([]Verdict, error) {
	out := make([]Verdict, 0, len(recs))
	for i := range recs {
		envs, err := taubench.Events(recs[i])
		if err != nil {
			return nil, err
		}
		in, err := InputFromEvents(envs)
		if err != nil {
			return nil, err
		}
		ev := Evaluate(in)
		base, err := canonicalBaseline(recs[i].Info.Task.Actions, in.Calls)
		if err != nil {
			return nil, fmt.Errorf("flux: %s: %w", in.SessionID, err)
		}
		out = append(out, Verdict{
			SessionID:  in.SessionID,
			Reward:     recs[i].Reward,
			Evaluation: ev,
			Evaluator:  ev.Recommendation == events.MeetsCriteria,
			Baseline:   base,
		})
	}
	return out, nil
}

// Agreement is the fraction (0..1) of records on which the evaluator's
// prediction (recommendation meets_criteria) equals tau-bench's (reward
// 1), and the same fraction for the baseline of Verdict.Baseline.
func Agreement(recs []taubench.Record) (evaluator, baseline float64, err error) {
	if len(recs) == 0 {
		return 0, 0, errors.New("flux: agreement of no records")
	}
	vs, err := Verdicts(recs)
	if err != nil {
		return 0, 0, err
	}
	var e, b int
	for i := range vs {
		if vs[i].Evaluator == vs[i].Success() {
			e++
		}
		if vs[i].Baseline == vs[i].Success() {
			b++
		}
	}
	n := float64(len(vs))
	return float64(e) / n, float64(b) / n, nil
}

// canonicalBaseline: every ground-truth action has a call of the same tool
// whose arguments, re-encoded as canonical JSON (sorted keys, numbers as
// float64), equal the action's.
func canonicalBaseline(actions []taubench.Action, calls []events.TaskCompletedData) (bool, error) {
	have := map[string]bool{}
	for _, c := range calls {
		k, err := canonicalCall(c.ToolID, c.Inputs)
		if err != nil {
			return false, err
		}
		have[k] = true
	}
	for _, a := range actions {
		k, err := canonicalCall(a.Name, a.Kwargs)
		if err != nil {
			return false, err
		}
		if !have[k] {
			return false, nil
		}
	}
	return true, nil
}

func canonicalCall(name string, args json.RawMessage) (string, error) {
	var v any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &v); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return name + "\x00" + string(b), nil
}
