package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// patternWith waits (at most 30 s) until p's patterns table holds a
// pattern of scope followed by n sessions and returns it.
func patternWith(t *testing.T, p *pipeline.Pipeline, scope string, n int) sessions.Pattern {
	t.Helper()
	var pat sessions.Pattern
	deadline := time.Now().Add(30 * time.Second)
	for {
		found := false
		if err := sessions.EachPattern(p.Store, func(pt sessions.Pattern) bool {
			if pt.Scope == scope {
				pat, found = pt, true
			}
			return !found
		}); err != nil {
			t.Fatal(err)
		}
		if found && pat.SessionCount == n {
			return pat
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pattern of %s with %d sessions (last seen %+v)", scope, n, pat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// patternOf is the id of the pattern of scope's one session (patternWith).
func patternOf(t *testing.T, p *pipeline.Pipeline, scope string) string {
	t.Helper()
	return patternWith(t, p, scope, 1).ID
}

// GET /v1/patterns/{id} reads a coordination pattern and GET
// /v1/patterns/{id}/history the records of chronicle.patterns that made its
// counts, each with its log position and the counts and confidence after
// it. Before, a pattern was seen only as a search hit: an analyst's
// walkthrough (2026-12-07) could not answer why a pattern had confidence
// 0.667, nor which events made it. Two sessions with one tool sequence
// make one pattern: its history holds two records, the first creating it
// at (s + 1) / (1 + 2), the second bringing it to the row's counts.
// Another scope's token gets the 404 of an id no pattern has.
func TestPatternAndItsHistory(t *testing.T) {
	p, _, base := scopedServer(t)
	envs, sid := sessionIn(t, 3, "project:a", "PATTERN-TEST")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("first session: %d %v", code, m)
	}
	again, _ := sessionIn(t, 3, "project:a", "PATTERN-TEST")
	for i := range again {
		again[i].SessionID += "-again"
		again[i].ID += "-again"
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", again); code != 202 {
		t.Fatalf("second session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	pat := patternWith(t, p, "project:a", 2)
	code, v := call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID, nil)
	if code != 200 {
		t.Fatalf("pattern: %d %v", code, v)
	}
	if v["id"] != pat.ID || v["session_count"] != float64(2) || v["succeeded_count"] != float64(pat.SucceededCount) ||
		math.Abs(v["confidence"].(float64)-pat.Confidence()) > 1e-12 || !strings.Contains(fmt.Sprint(v["confidence_rule"]), "(succeeded_count + 1) / (session_count + 2)") {
		t.Fatalf("pattern %v; want its counts, confidence %v and the rule", v, pat.Confidence())
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/patterns/"+pat.ID, nil); code != 404 {
		t.Fatalf("another scope's token: %d %v; want 404", code, m)
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/patterns/"+pat.ID+"/history", nil); code != 404 {
		t.Fatalf("another scope's token, history: %d %v; want 404", code, m)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/patterns/pat-none", nil); code != 404 {
		t.Fatalf("an unknown id: %d %v; want 404", code, m)
	}

	code, h := call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID+"/history", nil)
	if code != 200 {
		t.Fatalf("history: %d %v", code, h)
	}
	recs, _ := h["records"].([]any)
	if len(recs) != 2 || h["record_count"] != float64(2) || h["matches"] != true || h["next_cursor"] != "" {
		t.Fatalf("history %v; want two records whose counts end at the row's", h)
	}
	first, second := recs[0].(map[string]any), recs[1].(map[string]any)
	met := 0.0
	if first["met"] == true {
		met = 1
	}
	if first["session_id"] != sid || first["change"] != "created" || first["session_count"] != float64(1) ||
		math.Abs(first["confidence"].(float64)-(met+1)/3) > 1e-12 || !strings.HasPrefix(fmt.Sprint(first["position"]), "chronicle.patterns:") {
		t.Fatalf("first record %v; want session %s creating the pattern at (%v + 1) / 3, with its position", first, sid, met)
	}
	if second["session_id"] != sid+"-again" || second["change"] != "updated" || second["session_count"] != float64(2) ||
		math.Abs(second["confidence"].(float64)-pat.Confidence()) > 1e-12 || !strings.Contains(fmt.Sprint(second["effect"]), "sessions 1 → 2") {
		t.Fatalf("second record %v; want the second session bringing the counts to the row's", second)
	}
	// paged: one record a page, the second page after the cursor
	code, h = call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID+"/history?limit=1", nil)
	if recs, _ := h["records"].([]any); code != 200 || len(recs) != 1 || h["next_cursor"] != "1" {
		t.Fatalf("limit=1: %d %v; want one record and next_cursor 1", code, h)
	}
	code, h = call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID+"/history?limit=1&cursor=1", nil)
	if recs, _ := h["records"].([]any); code != 200 || len(recs) != 1 || recs[0].(map[string]any)["session_id"] != sid+"-again" || h["next_cursor"] != "" {
		t.Fatalf("limit=1&cursor=1: %d %v; want the second record, the last", code, h)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID+"/history?cursor=x", nil); code != 400 || m["parameter"] != "cursor" {
		t.Fatalf("cursor=x: %d %v; want a 400 naming cursor", code, m)
	}
}

// A pattern's history is read from the log once and kept in the store's
// cache (keylog.ScanCached); a later call scans only what arrived since.
// After a third session joins the pattern, the history (whole, and paged
// with limit and cursor) is still what a scan of the whole partition
// without the cache answers.
func TestPatternHistoryCachedAnswersAsTheLog(t *testing.T) {
	p, _, base := scopedServer(t)
	post := func(suffix string) {
		envs, _ := sessionIn(t, 3, "project:a", "PATTERN-CACHE")
		for i := range envs {
			envs[i].SessionID += suffix
			envs[i].ID += suffix
		}
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
			t.Fatalf("session %q: %d %v", suffix, code, m)
		}
		waitCaughtUp(t, p)
	}
	uncached := func(pat sessions.Pattern) []sessions.PatternStep {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		steps, err := sessions.PatternLog(ctx, p.Broker.Addrs(), nil, pat.Scope, pat.ID)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	page := func(pat sessions.Pattern, query string) string {
		code, h := call(t, base, "tok-a", "GET", "/v1/patterns/"+pat.ID+"/history"+query, nil)
		if code != 200 {
			t.Fatalf("history%s: %d %v", query, code, h)
		}
		b, _ := json.Marshal(h["records"])
		return string(b)
	}
	asJSON := func(v any) string { // as call decodes an answer: keys in order
		b, _ := json.Marshal(v)
		var a any
		_ = json.Unmarshal(b, &a)
		b, _ = json.Marshal(a)
		return string(b)
	}
	post("")
	post("-2")
	pat := patternWith(t, p, "project:a", 2)
	if got, want := page(pat, ""), asJSON(uncached(pat)); got != want {
		t.Fatalf("first call:\n%s\nwant\n%s", got, want)
	}
	post("-3")
	pat = patternWith(t, p, "project:a", 3)
	want := uncached(pat)
	if len(want) != 3 {
		t.Fatalf("the log holds %d records of the pattern; want 3", len(want))
	}
	if got := page(pat, ""); got != asJSON(want) {
		t.Fatalf("after a third session:\n%s\nwant\n%s", got, asJSON(want))
	}
	if got := page(pat, "?limit=1&cursor=2"); got != asJSON(want[2:]) {
		t.Fatalf("limit=1&cursor=2:\n%s\nwant\n%s", got, asJSON(want[2:]))
	}
	if got := page(pat, "?limit=2"); got != asJSON(want[:2]) {
		t.Fatalf("limit=2:\n%s\nwant\n%s", got, asJSON(want[:2]))
	}
}
