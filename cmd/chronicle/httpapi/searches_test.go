package httpapi_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// GET /v1/searches/{id} shows the frontier and the best path, /nodes pages
// through the nodes, and POST /v1/searches/{id}/resume records the human's
// decision on a paused search (409 once it runs again, 400 for a bad
// decision); the same id in another scope is another search.
func TestSearchRoutes(t *testing.T) {
	p, _, base := scopedServer(t)
	for _, sc := range []string{"project:a", "project:b"} {
		tok := map[string]string{"project:a": "tok-a", "project:b": "tok-b"}[sc]
		if code, m := call(t, base, tok, "POST", "/v1/events", pausedSearchIn(t, sc, "s/1", "SECRET-"+sc)); code != 202 {
			t.Fatalf("seed %s: %d %v", sc, code, m)
		}
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "GET", "/v1/searches/s%2F1", nil)
	if code != 200 || m["status"] != treesearch.StatusPaused || m["goal"] != "obtain 24 SECRET-project:a" {
		t.Fatalf("GET search: %d %v", code, m)
	}
	if bp, _ := m["best_path"].([]any); len(bp) != 2 {
		t.Fatalf("best path %v", m["best_path"])
	}
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=1", nil)
	if nodes, _ := m["nodes"].([]any); code != 200 || len(nodes) != 1 || m["next_cursor"] != "r" {
		t.Fatalf("nodes page 1: %d %v", code, m)
	}
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=1&cursor=r", nil)
	if nodes, _ := m["nodes"].([]any); code != 200 || len(nodes) != 1 || m["next_cursor"] != "" {
		t.Fatalf("nodes page 2: %d %v", code, m)
	}
	if code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=0", nil); code != 400 {
		t.Fatalf("limit 0: %d %v", code, m)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "maybe"}); code != 400 {
		t.Fatalf("bad decision: %d %v", code, m)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "reject", "note": "no", "by": "ana"}); code != 202 {
		t.Fatalf("resume: %d %v", code, m)
	}
	key := events.EntityKey("project:a", "s/1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, _, _ := treesearch.Get(p.Store, key)
		if s.Status == treesearch.StatusRunning {
			if len(s.Decisions) != 1 || s.Decisions[0].By != "ana" || len(s.Open) != 0 {
				t.Fatalf("after resume %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not resumed: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "approve"}); code != 409 {
		t.Fatalf("resume a running search: %d %v", code, m)
	}
	// project:b's search of the same id is still paused
	if code, m = call(t, base, "tok-b", "GET", "/v1/searches/s%2F1", nil); code != 200 || m["status"] != treesearch.StatusPaused {
		t.Fatalf("project:b: %d %v", code, m)
	}
}
