package sessions

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A tool call that reaches the log after its session's completion (sent
// by another producer or thread, or redriven from a letter) revises the
// evaluation: the next revision counts it. Before, the call was counted
// in tool_calls while the evaluation kept saying it was never made, and
// PAIR and the memory bank worked from that (a Python integrator's
// walkthrough, 2026-12-01). An event of a session still running does not
// evaluate anything.
func TestLateToolCallRevisesTheEvaluation(t *testing.T) {
	store := openStore(t)
	applyEmitting := sessionApplier(t, store, "s")
	apply := func(typ events.Type, data any) []events.EvaluationData {
		t.Helper()
		return evaluationsIn(t, applyEmitting(typ, data))
	}
	call := map[string]any{"tool_id": "send_certificate", "session_id": "s", "success": true}
	apply(events.SessionStarted, events.SessionStartedData{OriginalTask: "Send the certificate.", SuccessCriteria: []events.Criterion{
		{ID: "cert", Description: "send_certificate called", Weight: 1, Check: events.Check{Kind: events.CheckToolCall, Name: "send_certificate"}}}})
	if evs := apply(events.WorkflowTaskCompleted, map[string]any{"tool_id": "get_user_details", "session_id": "s", "success": true}); len(evs) != 0 {
		t.Fatalf("a call of a running session emitted %d evaluations", len(evs))
	}
	evs := apply(events.SessionCompleted, events.SessionCompletedData{Output: "Done.", Outcome: "success"})
	if len(evs) != 1 || evs[0].Recommendation == events.MeetsCriteria || evs[0].Revision != 0 {
		t.Fatalf("at completion: %+v; want one evaluation, revision 0, not meeting the criterion", evs)
	}
	evs = apply(events.WorkflowTaskCompleted, call)
	if len(evs) != 1 || evs[0].Recommendation != events.MeetsCriteria || evs[0].Revision != 1 {
		t.Fatalf("after the late call: %+v; want revision 1 meeting the criterion", evs)
	}
	v, _, err := Get(store, events.EntityKey("project:a", "s"))
	if err != nil || v.Evaluation == nil || v.Evaluation.Revision != 1 || v.Evaluation.Recommendation != events.MeetsCriteria || v.ToolCalls != 2 {
		t.Fatalf("stored %+v %v; want revision 1 meeting the criterion, 2 tool calls", v, err)
	}
}

// A tool call after the completion that changes the session's tool
// sequence moves the session from its old pattern to its new one: the old
// pattern, which held only it, is removed, and the new one counts it once,
// as a success. Before, the session stayed in the old pattern and the new
// pattern's first count was a success without a session, confidence 1,
// which coordination.pattern.changed.v1 refuses, so the new pattern never
// appeared (a concurrency walkthrough, 2026-12-03).
func TestLateToolCallMovesThePattern(t *testing.T) {
	store := openStore(t)
	var off int64
	apply := func(typ events.Type, data any) {
		t.Helper()
		env, err := events.New(typ, "test", fmt.Sprint("e", off), time.Date(2026, 12, 3, 0, 0, int(off), 0, time.UTC), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "s", "project:a"
		if err := ApplyLocally(store, Processor{}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &env); err != nil {
			t.Fatal(err)
		}
		off++
	}
	patterns := func() []Pattern {
		t.Helper()
		var out []Pattern
		if err := EachPattern(store, func(p Pattern) bool { out = append(out, p); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	apply(events.SessionStarted, events.SessionStartedData{OriginalTask: "Book the flight.", SuccessCriteria: []events.Criterion{
		{ID: "book", Description: "book_flight called", Weight: 1, Check: events.Check{Kind: events.CheckToolCall, Name: "book_flight"}}}})
	apply(events.WorkflowTaskCompleted, map[string]any{"tool_id": "search_flight", "session_id": "s", "success": true})
	apply(events.SessionCompleted, events.SessionCompletedData{Output: "Done.", Outcome: "success"})
	if ps := patterns(); len(ps) != 1 || ps[0].SessionCount != 1 || ps[0].SucceededCount != 0 || len(ps[0].Steps) != 1 {
		t.Fatalf("at completion: %+v; want one failed pattern of one step", ps)
	}
	apply(events.WorkflowTaskCompleted, map[string]any{"tool_id": "book_flight", "session_id": "s", "success": true})
	ps := patterns()
	if len(ps) != 1 || len(ps[0].Steps) != 2 || ps[0].SessionCount != 1 || ps[0].SucceededCount != 1 || ps[0].Confidence() != 2.0/3 ||
		len(ps[0].Sessions) != 1 || len(ps[0].Succeeded) != 1 {
		t.Fatalf("after the late call: %+v; want only the two-step pattern, one session, a success", ps)
	}
}
