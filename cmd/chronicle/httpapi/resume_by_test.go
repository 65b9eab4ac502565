package httpapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// Who a resume records (data.by) is the authenticated caller, as the
// memory bank's authors are: absent → "token:<caller>", equal → kept,
// anything else → 403 naming by, on POST /v1/searches/{id}/resume, on
// POST /v1/events carrying search.resumed.v1 (403 naming /data/by) and
// over `chronicle mcp` (the Client with no Source leaves by out, so the
// token's name is recorded, not "mcp"). Found by an agent-runtime
// developer's walkthrough: a project:a token's resume with "by":
// "token:admin" was recorded as such, and stdio's as "mcp".
func TestResumeRecordsTheCaller(t *testing.T) {
	p, _, base := scopedServer(t)
	for _, id := range []string{"by-1", "by-2", "by-3"} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", id, "x")); code != 202 {
			t.Fatalf("seed %s: %d %v", id, code, m)
		}
	}
	waitCaughtUp(t, p)
	decidedBy := func(id string) string {
		t.Helper()
		waitCaughtUp(t, p)
		s, _, _ := treesearch.Get(p.Store, events.EntityKey("project:a", id))
		if len(s.Decisions) != 1 {
			t.Fatalf("%s: decisions %+v", id, s.Decisions)
		}
		return s.Decisions[0].By
	}
	code, m := call(t, base, "tok-a", "POST", "/v1/searches/by-1/resume", map[string]any{"decision": "approve", "by": "token:admin"})
	if code != 403 || !strings.Contains(fmt.Sprint(m["error"]), "by") || m["pointer"] != "/by" || m["reason"] != "must be the authenticated caller" {
		t.Fatalf("a resume by another identity: %d %v, want 403 naming by, with pointer /by and the reason (as a decision answer's)", code, m)
	}
	// a resume without a decision says it is required (it said `decision: "" is not approve or reject`)
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/by-1/resume", map[string]any{}); code != 400 || m["pointer"] != "/decision" || !strings.Contains(fmt.Sprint(m["reason"]), "required") {
		t.Fatalf("a resume without a decision: %d %v, want 400 /decision saying required", code, m)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/by-1/resume", map[string]any{"decision": "approve"}); code != 202 {
		t.Fatalf("resume without by: %d %v", code, m)
	}
	if by := decidedBy("by-1"); by != "token:a" {
		t.Fatalf("without by the decision records %q, want token:a", by)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/by-2/resume", map[string]any{"decision": "reject", "by": "token:a"}); code != 202 {
		t.Fatalf("resume by the caller's own identity: %d %v", code, m)
	}
	if by := decidedBy("by-2"); by != "token:a" {
		t.Fatalf("by token:a recorded as %q", by)
	}
	// `chronicle mcp` on stdio: a Caller without Source
	c := &httpapi.Client{Base: base, Token: "tok-a"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.SearchResume(ctx, "by-3", "", "approve", "over stdio", ""); err != nil {
		t.Fatal(err)
	}
	if by := decidedBy("by-3"); by != "token:a" {
		t.Fatalf("search_resume over stdio recorded %q, want token:a", by)
	}
	// POST /v1/events: the same rule on data.by
	env, err := events.New(events.SearchResumed, "test/mallory", "forged-resume", time.Now(), events.SearchResumedData{SearchID: "by-9", Decision: "approve", By: "token:admin"})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	if code, m = call(t, base, "tok-a", "POST", "/v1/events", env); code != 403 || m["pointer"] != "/data/by" {
		t.Fatalf("search.resumed.v1 with another identity's by: %d %v, want 403 /data/by", code, m)
	}
}

// On a service without tokens there is no identity to check a name
// against: a resume's given by is kept as sent, an absent one is
// "token:local".
func TestResumeByWithoutTokens(t *testing.T) {
	p, _ := setup(t)
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	t.Cleanup(srv.Close)
	for _, id := range []string{"nt-1", "nt-2"} {
		if code, m := call(t, srv.URL, "", "POST", "/v1/events", pausedSearchIn(t, "org:default", id, "x")); code != 202 {
			t.Fatalf("seed %s: %d %v", id, code, m)
		}
	}
	waitCaughtUp(t, p)
	for id, by := range map[string]string{"nt-1": "ana", "nt-2": ""} {
		body := map[string]any{"decision": "approve"}
		if by != "" {
			body["by"] = by
		}
		if code, m := call(t, srv.URL, "", "POST", "/v1/searches/"+id+"/resume", body); code != 202 {
			t.Fatalf("%s: %d %v", id, code, m)
		}
	}
	waitCaughtUp(t, p)
	for id, want := range map[string]string{"nt-1": "ana", "nt-2": "token:local"} {
		s, _, _ := treesearch.Get(p.Store, events.EntityKey("org:default", id))
		if len(s.Decisions) != 1 || s.Decisions[0].By != want {
			t.Fatalf("%s: decisions %+v, want by %s", id, s.Decisions, want)
		}
	}
}

// A resume whose note takes its event above the size limit is a 413
// naming the body's /note, as a bad note is a 400 naming it; it said
// "event 0: /: …", an index and a pointer of no request the caller sent
// (a walkthrough).
func TestResumeWithAnOversizedNoteNamesTheNote(t *testing.T) {
	p, _, base := scopedServer(t)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "big-note", "x")); code != 202 {
		t.Fatalf("seed: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	note := strings.Repeat("n", events.MaxEventBytes)
	code, m := call(t, base, "tok-a", "POST", "/v1/searches/big-note/resume", map[string]any{"decision": "approve", "note": note})
	if code != 413 || m["pointer"] != "/note" || strings.Contains(fmt.Sprint(m["error"]), "event 0") || !strings.Contains(fmt.Sprint(m["error"]), "of them in the note") {
		t.Fatalf("an oversized note: %d %.300v; want 413 naming /note, no event index", code, m)
	}
	if s, _, _ := treesearch.Get(p.Store, events.EntityKey("project:a", "big-note")); s.Status != treesearch.StatusPaused {
		t.Fatalf("after the refused resume: %s, want paused", s.Status)
	}
}
