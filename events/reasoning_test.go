package events

import (
	"testing"
	"time"
)

// A reasoning pass is keyed by its task (data task_id) on
// chronicle.reasoning, even when it names a session; without task_id the
// sessionid is the task; a bad task_id is refused naming the field.
func TestReasoningPassKey(t *testing.T) {
	mk := func(d ReasoningPassData, session string) *Envelope {
		t.Helper()
		e, err := New(ReasoningPassCompleted, "test/key", "k1", time.Unix(1, 0), d)
		if err != nil {
			t.Fatal(err)
		}
		e.SessionID, e.Scope = session, "project:a"
		return &e
	}
	d := ReasoningPassData{TaskID: "task/1", PassNumber: 1, Phase: "A"}
	if k, err := Key(mk(d, "sess-9")); err != nil || k != "project:a/task/1" {
		t.Fatalf("with task_id and a session: %q %v", k, err)
	}
	d.TaskID = ""
	if k, err := Key(mk(d, "sess-9")); err != nil || k != "project:a/sess-9" {
		t.Fatalf("without task_id: %q %v", k, err)
	}
	if _, err := Key(mk(d, "")); err == nil {
		t.Fatal("neither task_id nor sessionid: no error")
	}
	d.TaskID = "/bad"
	if _, err := Key(mk(d, "sess-9")); err == nil || err.(*ValidationError).Pointer != "/data/task_id" {
		t.Fatalf("bad task_id: %v", err)
	}
	if ti, _ := Lookup(ReasoningPassCompleted); ti.Topic != TopicReasoning {
		t.Fatalf("topic %s", ti.Topic)
	}
}
