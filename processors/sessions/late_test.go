package sessions

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
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
