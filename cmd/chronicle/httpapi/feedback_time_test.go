package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// The memory bank's vote rules count by a feedback's time: one vote per
// source and polarity per 7 days, consensus within 7 days. On POST
// /v1/events the time was the producer's, so one token pruned a memory
// three sources used with four backdated negative signals (each earlier
// than the vote before it, so none was "within 7 days" of an applied
// one). A feedback's time there must be the present (within
// httpapi.FeedbackClockSkew) or left out, when the log's receive time is
// used; a usage's or recording's time counts in no vote and is kept.
func TestEventsFeedbackTimeIsThePresent(t *testing.T) {
	_, _, base := scopedServer(t)
	fb := func(id string, at time.Time) map[string]any {
		m := map[string]any{"specversion": "1.0", "id": id, "source": "test/time", "type": string(events.MemoryFeedback), "scope": "project:a",
			"data": map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": false}}
		if !at.IsZero() {
			m["time"] = at.UTC().Format(time.RFC3339Nano)
		}
		return m
	}
	now := time.Now()
	for name, at := range map[string]time.Time{"a week back": now.Add(-8 * 24 * time.Hour), "an hour back": now.Add(-time.Hour), "ten minutes ahead": now.Add(10 * time.Minute)} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-"+strings.ReplaceAll(name, " ", "-"), at)); code != 403 || m["pointer"] != "/time" {
			t.Errorf("a feedback dated %s: %d %v; want 403 naming /time", name, code, m)
		}
	}
	// more than events.MaxTimeAhead ahead, an event of any type is a 400
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-a-day-ahead", now.Add(24*time.Hour))); code != 400 || m["pointer"] != "/time" {
		t.Errorf("a feedback dated a day ahead: %d %v; want 400 naming /time", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []any{fb("f-now", now), fb("f-none", time.Time{})}); code != 202 {
		t.Fatalf("a feedback dated now and one without a time: %d %v; want 202", code, m)
	}
	rec := map[string]any{"specversion": "1.0", "id": "r-old", "source": "test/time", "type": string(events.MemoryRecorded), "scope": "project:a",
		"time": "2024-05-01T00:00:00Z", "data": map[string]any{"memory_id": "m-old", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit"}}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", rec); code != 202 {
		t.Fatalf("an old recording: %d %v; want 202 (its time counts in no vote)", code, m)
	}
}

// A client that resends a feedback it is unsure about (same id, its
// original time) once FeedbackClockSkew has passed got a 403 for a vote
// the memory bank had applied (a walkthrough's finding): the time is no
// part of an event's identity, so the resend is a plain duplicate and is
// answered as one, 202, and counted once. A feedback out of the window
// that was never accepted is still refused, and the 403 says what to do
// (resend without time, or with the present); one that reuses an accepted
// feedback's id for other content says to use a new id.
func TestEventsFeedbackResentAfterTheWindow(t *testing.T) {
	p, _, base := scopedServer(t)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "r-1", "source": "test/resend", "type": string(events.MemoryRecorded),
		"scope": "project:a", "data": map[string]any{"memory_id": "m1", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit"}}); code != 202 {
		t.Fatalf("recording m1: %d %v", code, m)
	}
	fb := func(id string, at time.Time, positive bool) map[string]any {
		m := map[string]any{"specversion": "1.0", "id": id, "source": "test/resend", "type": string(events.MemoryFeedback), "scope": "project:a",
			"data": map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": positive}}
		if !at.IsZero() {
			m["time"] = at.UTC().Format(time.RFC3339Nano)
		}
		return m
	}
	// the first send, 3 s inside the window: accepted and applied
	sent := time.Now().Add(-httpapi.FeedbackClockSkew + 3*time.Second)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-1", sent, false)); code != 202 {
		t.Fatalf("the first send: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	time.Sleep(time.Until(sent.Add(httpapi.FeedbackClockSkew + time.Second)))

	// the resend with the original time, now out of the window: a duplicate
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-1", sent, false)); code != 202 || fmt.Sprint(m["ids"]) != "[f-1]" {
		t.Fatalf("the resend of an accepted feedback with its original time: %d %v; want 202 {ids: [f-1]}, as a duplicate", code, m)
	}
	waitCaughtUp(t, p)
	if _, signals, err := memories.History(p.Store, events.EntityKey("project:a", "m1")); err != nil || len(signals) != 1 || signals[0].EventID != "f-1" {
		t.Fatalf("m1's signals after the resend: %+v %v; want f-1 once", signals, err)
	}

	// never accepted: 403 naming /time, saying to resend without time
	code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-2", sent, false))
	if msg, _ := m["error"].(string); code != 403 || m["pointer"] != "/time" || !strings.Contains(msg, "without time") || !strings.Contains(msg, "present") {
		t.Fatalf("a feedback out of the window never accepted: %d %v; want 403 naming /time, saying to resend without time or with the present", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-2", time.Time{}, false)); code != 202 {
		t.Fatalf("f-2 resent without time: %d %v; want 202", code, m)
	}
	// an accepted feedback's id with other content: not a resend
	code, m = call(t, base, "tok-a", "POST", "/v1/events", fb("f-1", sent, true))
	if msg, _ := m["error"].(string); code != 403 || m["pointer"] != "/time" || !strings.Contains(msg, "new id") {
		t.Fatalf("f-1's id with other content, out of the window: %d %v; want 403 naming /time, saying to use a new id", code, m)
	}
}
