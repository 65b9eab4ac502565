package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A second start of a session (another event id) is refused with
// ErrAlreadyStarted, running or completed, and changes nothing: before,
// it replaced the task and criteria, so a completed session read another
// task, a started_at after its completed_at and an evaluation of criteria
// it no longer had (a new user's walkthrough, 2026-12-03). A minute that
// came before the start does not count as a start.
func TestSecondStartIsRefused(t *testing.T) {
	store := openStore(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	off := 0
	apply := func(typ events.Type, data any) error {
		t.Helper()
		env, err := events.New(typ, "test/restart", "r-"+string(rune('a'+off)), at.Add(time.Duration(off)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "rs", "project:a"
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(off)}
		off++
		_, err = store.Apply(Name, pos, &env, Processor{}.Apply)
		return err
	}
	start := func(task, crit string) events.SessionStartedData {
		return events.SessionStartedData{OriginalTask: task, SuccessCriteria: []events.Criterion{
			{ID: crit, Description: "says " + crit, Weight: 1, Check: events.Check{Kind: events.CheckOutputContains, Text: crit}}}}
	}
	if err := apply(events.MinuteRecorded, events.MinuteData{EventType: "m", Actor: "a", Data: []byte(`{}`)}); err != nil {
		t.Fatalf("a minute before the start: %v", err)
	}
	if err := apply(events.SessionStarted, start("task one", "ok")); err != nil {
		t.Fatalf("the first start after a minute: %v", err)
	}
	if err := apply(events.SessionStarted, start("task two", "zebra")); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("a second start of a running session: %v, want ErrAlreadyStarted", err)
	}
	if err := apply(events.SessionCompleted, events.SessionCompletedData{Output: "ok", Outcome: "success"}); err != nil {
		t.Fatalf("completion: %v", err)
	}
	if err := apply(events.SessionStarted, start("task three", "zebra")); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("a start of a completed session: %v, want ErrAlreadyStarted", err)
	}
	v, ok, err := Get(store, events.EntityKey("project:a", "rs"))
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if v.Task != "task one" || len(v.Criteria) != 1 || v.Criteria[0].ID != "ok" || v.StartedAt >= v.CompletedAt || v.Status != StatusCompleted {
		t.Fatalf("stored %+v: want task one, criterion ok, started before completed", v)
	}
	if v.Evaluation == nil || v.Evaluation.Recommendation != events.MeetsCriteria {
		t.Fatalf("evaluation %+v, want meets_criteria of criterion ok", v.Evaluation)
	}
}
