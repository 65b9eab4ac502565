package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
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
	for name, at := range map[string]time.Time{"a week back": now.Add(-8 * 24 * time.Hour), "an hour back": now.Add(-time.Hour), "a day ahead": now.Add(24 * time.Hour)} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", fb("f-"+strings.ReplaceAll(name, " ", "-"), at)); code != 403 || m["pointer"] != "/time" {
			t.Errorf("a feedback dated %s: %d %v; want 403 naming /time", name, code, m)
		}
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
