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
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := openStore(t)
	off := 0
	apply := func(typ events.Type, data any) (evs []events.EvaluationData) {
		t.Helper()
		env, err := events.New(typ, "test/late", fmt.Sprintf("e-%d", off), at.Add(time.Duration(off)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "s", "project:a"
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(off)}
		off++
		var emitted []projections.OutboxRecord
		if _, err := store.Apply(Name, pos, &env, func(tx *projections.Tx, env *events.Envelope) error {
			err := Processor{}.Apply(tx, env)
			emitted = tx.Emitted()
			return err
		}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		for _, rec := range emitted {
			if rec.Type == events.EvaluationCompleted {
				e, err := events.ParseEvent(rec.Value)
				if err != nil {
					t.Fatal(err)
				}
				var ev events.EvaluationData
				if err := e.Decode(&ev); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
		}
		return evs
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
