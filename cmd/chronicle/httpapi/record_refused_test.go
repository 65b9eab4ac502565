package httpapi_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
)

// TestRefusedRecordingIsAnError: a memory whose id is the content address
// of another title and content makes the memory bank refuse a later
// POST /v1/memories of that title and content ("memory id … already holds
// other content"). It used to be answered 202 after 5 s as if recorded,
// with the id of the unrelated memory (a review's finding); it is a 400
// now, and nothing is written.
func TestRefusedRecordingIsAnError(t *testing.T) {
	p, _, base := scopedServer(t)
	addr := distill.MemoryID("project:a", "Victim title", "Victim content.")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "squat-1", "source": "test/squat",
		"type": string(events.MemoryRecorded), "scope": "project:a", "data": map[string]any{"memory_id": addr, "title": "Squatter",
			"description": "d", "content": "Other content.", "outcome": "success", "source": "explicit"}}); code != 202 {
		t.Fatalf("squat: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	t0 := time.Now()
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Victim title", "description": "d",
		"content": "Victim content.", "outcome": "success"})
	t.Logf("POST /v1/memories after %s: %d %v", time.Since(t0).Round(time.Millisecond), code, rec)
	waitCaughtUp(t, p)
	gcode, got := call(t, base, "tok-a", "GET", "/v1/memories/"+addr, nil)
	t.Logf("GET the answered id: %d title=%v evidence=%v", gcode, got["title"], got["evidence"])
	if code != 400 || got["title"] != "Squatter" {
		t.Errorf("a refused recording answered %d %v (the memory at its id: %d %v); want 400 and the squatter's memory untouched", code, rec, gcode, got["title"])
	}
}
