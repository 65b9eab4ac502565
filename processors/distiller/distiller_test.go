package distiller

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// The worker asks the model nothing for a not_evaluated evaluation (the
// deterministic extractor gives no memory for it either: nothing tells
// success from failure) nor for a judge revision that is not the session's
// first score. Before, a not_evaluated session was sent to the model as a
// failure at composite 0. The worker here has no store, model or
// producer: touching any of them fails the test.
func TestNothingToDistil(t *testing.T) {
	for _, ev := range []events.EvaluationData{
		{SessionID: "s", Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}, Recommendation: events.NotEvaluated},
		{SessionID: "s", Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}, Recommendation: events.TotalFailure, Revision: 2},
	} {
		env, err := events.New(events.EvaluationCompleted, "chronicle/sessions", "ev", time.Unix(1700000000, 0), ev)
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s revision %d: the worker went on to distil (%v)", ev.Recommendation, ev.Revision, r)
				}
			}()
			if err := (&Worker{}).Handle(context.Background(), &env); err != nil {
				t.Errorf("%s revision %d: %v", ev.Recommendation, ev.Revision, err)
			}
		}()
	}
}
