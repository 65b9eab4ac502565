package httpapi_test

import "testing"

// A memory's history says what its usage_count counts beside
// retrieval_count: a recording merged into it as evidence is a usage by
// its source (its session, else its recorder), so a memory never
// searched has retrieval_count 0 and usage_count above 0. An analyst's
// walkthrough (2026-12-07) read usage_count 7 against retrieval_count 0
// and nothing in the history said why; the history now carries
// usage_count and evidence on every page.
func TestMemoryHistoryShowsUsageBesideRetrievals(t *testing.T) {
	p, _, base := scopedServer(t)
	body := map[string]any{"title": "Quince plan", "description": "d", "content": "Quince content.", "outcome": "success", "scope": "project:a"}
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", body)
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	id := rec["id"].(string)
	// the same memory recorded by another caller: merged as evidence
	if code, m := call(t, base, "tok-admin", "POST", "/v1/memories", body); code != 202 || m["id"] != id {
		t.Fatalf("second recording: %d %v; want it merged into %s", code, m, id)
	}
	waitCaughtUp(t, p)
	code, h := call(t, base, "tok-a", "GET", "/v1/memories/"+id+"/history", nil)
	if code != 200 {
		t.Fatalf("history: %d %v", code, h)
	}
	if h["retrieval_count"] != float64(0) || h["usage_count"] != float64(1) || h["evidence"] != float64(2) {
		t.Fatalf("history: retrieval_count %v, usage_count %v, evidence %v; want 0, 1 (the merge's recorder) and 2", h["retrieval_count"], h["usage_count"], h["evidence"])
	}
}
