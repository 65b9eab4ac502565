package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// One token that starts three sessions of its own and searches once as
// each (GET /v1/memories/search?session_id=, which counts a search by its
// session once the session exists) lifts a memory's usage_count to 3, but
// it is one caller: its single feedback is stored for consensus, not
// applied alone (issue 11 item 4, a gap the last closing note listed;
// before, the signal moved confidence 0.8 → 0.6).
func TestSessionsOfOneTokenAreOneUser(t *testing.T) {
	p, _, base := scopedServer(t)
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Quote the seat map first",
		"description": "Show the seat map before changing seats.", "content": "Read the seat map, then confirm the seat with the user.",
		"outcome": "success", "scope": "project:a"})
	if code != 202 {
		t.Fatalf("recording: %d %v", code, rec)
	}
	id, _ := rec["id"].(string)
	var starts []any
	for i := 1; i <= 3; i++ {
		starts = append(starts, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("start-%d", i), "source": "test/mallory",
			"type": string(events.SessionStarted), "scope": "project:a", "sessionid": fmt.Sprintf("mal-%d", i),
			"data": map[string]any{"original_task": "change my seat", "success_criteria": []any{}}})
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", starts); code != 202 {
		t.Fatalf("three session starts: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	for i := 1; i <= 3; i++ {
		q := fmt.Sprintf("/v1/memories/search?min_confidence=0&limit=1&query=%s&session_id=mal-%d", url.QueryEscape("seat map"), i)
		if code, m := call(t, base, "tok-a", "GET", q, nil); code != 200 || len(m["memories"].([]any)) != 1 {
			t.Fatalf("search as mal-%d: %d %v", i, code, m)
		}
	}
	waitCaughtUp(t, p)
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+id, nil); code != 200 || m["usage_count"] != 3.0 {
		t.Fatalf("memory after three sessions' searches: %d %v; want usage_count 3 (usage counts sessions)", code, m)
	}
	code, fb := call(t, base, "tok-a", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
	if code != 200 || fb["new_confidence"] != 0.8 || !strings.HasPrefix(fb["message"].(string), "signal stored") {
		t.Fatalf("the same token's single feedback: %d %v; want stored for consensus, confidence 0.8", code, fb)
	}
}

// One token that writes four whole sessions of one task, whose distilled
// memories merge into one (usage_count 3: the three merges, each a use by
// its session), is still one author: its session starts carry its
// identity (recorded_by, stamped by POST /v1/events), the distilled
// recordings carry it on, and its single feedback is stored for consensus.
// Before, each session counted as a user of its own and the signal applied
// alone (a gap the last closing notes listed). A start naming another
// author is refused naming the field.
func TestWholeSessionsOfOneTokenAreOneUser(t *testing.T) {
	p, _, base := scopedServer(t)
	orig, _ := sessionIn(t, 0, "project:a", "QUOKKA")
	for k := 1; k <= 4; k++ {
		copyOf := make([]events.Envelope, len(orig))
		copy(copyOf, orig)
		for j := range copyOf {
			copyOf[j].ID = fmt.Sprintf("%s-c%d", orig[j].ID, k)
			copyOf[j].SessionID = fmt.Sprintf("%s-c%d", orig[j].SessionID, k)
		}
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", copyOf); code != 202 {
			t.Fatalf("session copy %d: %d %v", k, code, m)
		}
	}
	waitCaughtUp(t, p)
	code, res := call(t, base, "tok-a", "GET", "/v1/memories/search?min_confidence=0&limit=20&query="+url.QueryEscape("QUOKKA"), nil)
	if code != 200 {
		t.Fatalf("search: %d %v", code, res)
	}
	var id string
	var before float64
	for _, h := range res["memories"].([]any) {
		m := h.(map[string]any)
		if n, _ := m["usage_count"].(float64); n >= 3 {
			id, before = m["id"].(string), m["confidence"].(float64)
			break
		}
	}
	if id == "" {
		t.Fatalf("no memory merged from the four sessions (usage_count ≥ 3) among %v", res["memories"])
	}
	code, fb := call(t, base, "tok-a", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
	if code != 200 || fb["new_confidence"] != before || !strings.HasPrefix(fb["message"].(string), "signal stored") {
		t.Fatalf("the writer's single feedback on a memory of its own four sessions: %d %v; want stored for consensus, confidence %v", code, fb, before)
	}
	// the start carries its writer; another author is refused
	start := orig[0]
	start.ID, start.SessionID = "start-forged", "forged"
	var d map[string]any
	_ = json.Unmarshal(start.Data, &d)
	d["recorded_by"] = "token:b"
	start.Data, _ = json.Marshal(d)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{start}); code != 403 || m["pointer"] != "/data/recorded_by" {
		t.Fatalf("a start naming another author: %d %v; want 403 naming /data/recorded_by", code, m)
	}
}
