package pair_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/projections"
)

func rate(x float64) *float64 { return &x }

// sampleContext is a context of two gaps, one with a strategy (success rate 1),
// one with nothing retrieved.
func sampleContext() pair.Context {
	return pair.Context{SessionID: "s1", Iteration: 1, Composite: 50, Recommendation: pair.ReviseWithPatterns, NextIteration: 2,
		Gaps: []pair.GapContext{
			{CriterionID: "action-3", Description: "call update_reservation_flights(reservation_id=ABC, cabin=economy)", Score: 0, Severity: "critical", ImprovementPriority: 10,
				Patterns: []pair.Group{{Category: "update_reservation_flights", SuccessRate: rate(1), Sessions: 2, Confidence: 0.7, Examples: []pair.Example{
					{MemoryID: "mem-1", Title: "Strategy: update_reservation_flights", Kind: pair.KindPattern, Confidence: 0.7, Relevance: 0.8, SuccessRate: rate(1), Sessions: 2,
						Content: "Tool sequence that met every weighted criterion:\n1. get_user_details(user_id)\n2. get_reservation_details(reservation_id) ×2\n3. update_reservation_flights(cabin, flights, reservation_id)\nLook up first."}}}}},
			{CriterionID: "no-unrequested-writes", Description: "no airline-database write besides the ground-truth ones", Score: 0, Severity: "critical", ImprovementPriority: 10},
		}}
}

func TestReviseIsDeterministicAndNamesWhatToDo(t *testing.T) {
	r := pair.Revise(sampleContext())
	if !reflect.DeepEqual(r, pair.Revise(sampleContext())) {
		t.Fatal("not deterministic")
	}
	if strings.Join(r.FollowSequence, " | ") != "get_user_details(user_id) | get_reservation_details(reservation_id) ×2 | update_reservation_flights(cabin, flights, reservation_id)" || r.FollowFrom != "mem-1" {
		t.Fatalf("follow %v from %s", r.FollowSequence, r.FollowFrom)
	}
	if len(r.MissingWrites) != 1 || !strings.HasPrefix(r.MissingWrites[0], "update_reservation_flights(") || len(r.Rules) != 1 || r.NextIteration != 2 {
		t.Fatalf("revision %+v", r)
	}
	// one of two equally weighted gaps covered at success rate 1: half the
	// remaining 50 points
	if r.EstimatedImprovement != 25 {
		t.Fatalf("estimated improvement %v", r.EstimatedImprovement)
	}
	if want := "Based on 2 similar past coordination decisions: success rate 100%, consider \"Strategy: update_reservation_flights\", confidence 0.70."; r.Recommendations[0].Text != want {
		t.Fatalf("recommendation %q", r.Recommendations[0].Text)
	}
	if !strings.Contains(r.Rationale, "update_reservation_flights") || !strings.Contains(r.Rationale, "Iteration 1 scored 50.00") {
		t.Fatalf("rationale %q", r.Rationale)
	}
	stop := sampleContext()
	stop.Recommendation, stop.NextIteration, stop.Iteration = pair.StopIterationLimit, 0, 3
	if r := pair.Revise(stop); r.NextIteration != 0 || !strings.Contains(r.Rationale, "last of the loop") {
		t.Fatalf("stop revision %+v", r)
	}
}

func loopEvents(t *testing.T, composite float64, c pair.Context) []events.Envelope {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev, err := events.New(events.EvaluationCompleted, "chronicle/sessions", "ev-"+c.SessionID, at, events.EvaluationData{SessionID: c.SessionID, Composite: composite, Recommendation: "total_failure", Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}})
	if err != nil {
		t.Fatal(err)
	}
	ce, err := events.New(pair.ContextRetrieved, pair.Source, "ctx-"+c.SessionID, at.Add(time.Second), c)
	if err != nil {
		t.Fatal(err)
	}
	ev.Scope, ce.Scope = "project:a", "project:a"
	return []events.Envelope{ev, ce}
}

func rowsOf(t *testing.T, order []int, evs []events.Envelope) string {
	t.Helper()
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for n, i := range order {
		ti, _ := events.Lookup(evs[i].Type)
		if _, err := s.Apply(pair.LoopName, projections.Position{Topic: string(ti.Topic), Offset: int64(n)}, &evs[i], pair.Loop{}.Apply); err != nil {
			t.Fatal(err)
		}
	}
	st, ok, err := pair.GetLoop(s, events.EntityKey("project:a", "s1"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// The loop state is the same whichever of its two topics is read first
// (as a replay that reads one topic after the other would), and says
// REVISION_READY, MAX_ITERATIONS_REACHED or SUCCESS as the design does.
func TestLoopStateIsOrderIndependent(t *testing.T) {
	evs := loopEvents(t, 50, sampleContext())
	a, b := rowsOf(t, []int{0, 1}, evs), rowsOf(t, []int{1, 0}, evs)
	if a != b {
		t.Fatalf("order changes the state:\n%s\n%s", a, b)
	}
	var st pair.LoopState
	_ = json.Unmarshal([]byte(a), &st)
	if st.Status != pair.LoopRevisionReady || st.Revision == nil || st.Iteration != 1 || st.Composite != 50 {
		t.Fatalf("state %+v", st)
	}
	stop := sampleContext()
	stop.Recommendation, stop.NextIteration, stop.Iteration = pair.StopIterationLimit, 0, 3
	_ = json.Unmarshal([]byte(rowsOf(t, []int{0, 1}, loopEvents(t, 40, stop))), &st)
	if st.Status != pair.LoopMaxIterations {
		t.Fatalf("iteration 3 below 95: %s", st.Status)
	}
	_ = json.Unmarshal([]byte(rowsOf(t, []int{0}, loopEvents(t, 97, sampleContext()))), &st)
	if st.Status != pair.LoopSuccess {
		t.Fatalf("composite 97: %s", st.Status)
	}
}

// The pending evaluation row (EvaluationEvent, kept for POST …/improve):
// the evaluation below 95 alone leaves it, the event as it was applied;
// with its context, in either order, the whole pairloop projection is the
// same and holds none; an evaluation at 95 or above never leaves one.
func TestPendingEvaluationRow(t *testing.T) {
	evs := loopEvents(t, 50, sampleContext())
	key := events.EntityKey("project:a", "s1")
	run := func(order []int, evs []events.Envelope) (string, *events.Envelope) {
		t.Helper()
		s, err := projections.Open(t.TempDir(), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for n, i := range order {
			ti, _ := events.Lookup(evs[i].Type)
			if _, err := s.Apply(pair.LoopName, projections.Position{Topic: string(ti.Topic), Offset: int64(n)}, &evs[i], pair.Loop{}.Apply); err != nil {
				t.Fatal(err)
			}
		}
		d, err := s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		env, ok, err := pair.EvaluationEvent(s, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return d.Projections[pair.LoopName], nil
		}
		return d.Projections[pair.LoopName], &env
	}
	_, pending := run([]int{0}, evs)
	if pending == nil || pending.ID != evs[0].ID || pending.Source != evs[0].Source || pending.Time != evs[0].Time || pending.Scope != evs[0].Scope || string(pending.Data) != string(evs[0].Data) {
		t.Fatalf("pending evaluation %+v, want the applied event %+v", pending, evs[0])
	}
	a, pa := run([]int{0, 1}, evs)
	b, pb := run([]int{1, 0}, evs)
	if a != b || pa != nil || pb != nil {
		t.Fatalf("with the context: digests %s / %s, pending %v / %v", a, b, pa, pb)
	}
	if _, p := run([]int{0}, loopEvents(t, 97, sampleContext())); p != nil {
		t.Fatal("an evaluation at 97 left a pending row")
	}
}
