package sessions_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestEvaluationLogOf: a session's evaluation is tied to its records in
// the log from the session index: the completion is the first one after
// the first start (a completion before the start, dead-lettered, and a
// second completion, dead-lettered too, are not it), and the record is the
// session's last evaluation record only when the index holds one per
// revision so far (revision 1 with a single record: that record is
// revision 0's, so none is named). Before, GET /v1/sessions/{id} named
// neither, and its evaluation could not be tied to its evidence (an
// analyst's walkthrough, 2026-12-07).
func TestEvaluationLogOf(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	n := 0
	apply := func(topic events.Topic, off int64, typ events.Type, data any) {
		t.Helper()
		env, err := events.New(typ, "test", "e"+string(rune('a'+n)), at, data)
		if err != nil {
			t.Fatal(err)
		}
		n++
		env.Scope, env.SessionID = "project:a", "s"
		if _, err := store.Apply(sessionlog.Name, projections.Position{Topic: string(topic), Partition: 1, Offset: off}, &env, sessionlog.Processor{}.Apply); err != nil {
			t.Fatal(err)
		}
	}
	key := events.EntityKey("project:a", "s")
	ev := &events.EvaluationData{SessionID: "s", Recommendation: "needs_improvement"}
	if el, err := sessions.EvaluationLogOf(store, key, ev); err != nil || el != nil {
		t.Fatalf("no index rows: %+v %v, want nil", el, err)
	}
	apply(events.TopicSessions, 2, events.SessionCompleted, map[string]any{})
	apply(events.TopicSessions, 3, events.SessionStarted, map[string]any{})
	apply(events.TopicSessions, 5, events.SessionCompleted, map[string]any{})
	apply(events.TopicSessions, 6, events.SessionCompleted, map[string]any{})
	if el, err := sessions.EvaluationLogOf(store, key, ev); err != nil || el == nil || el.Record != nil || el.Completion == nil || el.Completion.Position != "chronicle.sessions:1:5" || el.Completion.Type != events.SessionCompleted {
		t.Fatalf("before the evaluation's record: %+v %v, want completion chronicle.sessions:1:5 and no record", el, err)
	}
	apply(events.TopicEvaluations, 4, events.EvaluationCompleted, map[string]any{"session_id": "s"})
	el, err := sessions.EvaluationLogOf(store, key, ev)
	if err != nil || el == nil || el.Record == nil || el.Record.Position != "chronicle.evaluations:1:4" || el.Record.Topic != string(events.TopicEvaluations) || el.Record.Offset != 4 {
		t.Fatalf("revision 0: %+v %v, want record chronicle.evaluations:1:4", el, err)
	}
	ev.Revision = 1
	if el, err := sessions.EvaluationLogOf(store, key, ev); err != nil || el == nil || el.Record != nil || el.Completion == nil {
		t.Fatalf("revision 1 with one evaluation record: %+v %v, want no record (that one is revision 0's), the completion", el, err)
	}
	if el, err := sessions.EvaluationLogOf(store, key, nil); err != nil || el != nil {
		t.Fatalf("no evaluation: %+v %v, want nil", el, err)
	}
}
