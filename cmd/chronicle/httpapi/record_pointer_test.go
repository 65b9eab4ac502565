package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRecordMemoryErrorsNameTheRequest: POST /v1/memories' schema errors
// name the body's member (/tags/0), not the written event's (/data/tags/0,
// a member no request body has); a null body is refused as [] is, not
// taken for {} ("title: required"). Both found by a new user's
// walkthrough.
func TestRecordMemoryErrorsNameTheRequest(t *testing.T) {
	_, _, base := scopedServer(t)
	rec := map[string]any{"title": "Tag it", "description": "d", "content": "c", "outcome": "success", "tags": []string{"ok", ""}}
	code, m := call(t, base, "tok-a", "POST", "/v1/memories", rec)
	if code != 400 || m["pointer"] != "/tags/1" || !strings.Contains(m["error"].(string), "/tags/1: ") || strings.Contains(m["error"].(string), "/data") {
		t.Fatalf("an empty tag: %d %v; want 400 naming /tags/1", code, m)
	}
	post := func(body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base+"/v1/memories", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer tok-a")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	_, arr := post("[]")
	for _, body := range []string{"null", " null\n"} {
		if code, m := post(body); code != 400 || m["error"] != "body: got null, want object" {
			t.Fatalf("body %q: %d %v; want 400 like [] (%v)", body, code, m, arr["error"])
		}
	}
	// bytes that are no UTF-8 and lone surrogates are refused naming the
	// member, as POST /v1/events refuses them; before, each was read as
	// U+FFFD, so four different titles were one memory with its evidence
	// counted four times (a Python integrator's walkthrough, 2026-12-01)
	for _, title := range []string{`A\ud800`, `A\udfff`, "A\xff", "A\xfe"} {
		body := `{"title":"` + title + `","description":"d","content":"surrogate test","outcome":"success"}`
		code, m := post(body)
		reason, _ := m["reason"].(string)
		if code != 400 || m["pointer"] != "/title" || !(strings.Contains(reason, "UTF-8") || strings.Contains(reason, "surrogate")) {
			t.Errorf("title %q: %d %v; want a 400 naming /title", title, code, m)
		}
	}
	// a lone surrogate in an unknown member's name: the surrogate is named,
	// not an "unknown field" with U+FFFD in its name (a re-test,
	// 2026-12-01: the improve route's answer)
	code, m = post(`{"title":"t","description":"d","content":"c","outcome":"success","x\ud800":1}`)
	if msg, _ := m["error"].(string); code != 400 || !strings.Contains(msg, "lone UTF-16 surrogate") || strings.ContainsRune(msg, '\uFFFD') || m["pointer"] != "/" {
		t.Errorf("a surrogate in an unknown member's name: %d %v; want a 400 naming the surrogate, pointing to the object holding the member", code, m)
	}
}

// A recording whose event would be above the limit of one event is a 413
// naming the member to shorten, as an oversized feedback is a 413 naming
// /comment (before: a 400 with pointer "/", which names nothing a caller
// can shorten; a new user's walkthrough). Nothing is written: a recording
// that fits afterwards is the memory's only evidence.
func TestOversizedRecordingIsA413NamingTheMember(t *testing.T) {
	p, _, base := scopedServer(t)
	big := strings.Repeat("seat map ", 120_000) // ~1 MiB, inside the body limit, above the event's
	for _, c := range []struct {
		name, pointer string
		rec           map[string]any
	}{
		{"content", "/content", map[string]any{"title": "Big", "description": "d", "content": big, "outcome": "success"}},
		{"tags", "/tags", map[string]any{"title": "Big", "description": "d", "content": "c", "outcome": "success", "tags": []string{big[:500_000], big[:500_000]}}},
	} {
		code, m := call(t, base, "tok-a", "POST", "/v1/memories", c.rec)
		if code != 413 || m["pointer"] != c.pointer || !strings.Contains(m["reason"].(string), "limit of one event") {
			t.Errorf("an oversized %s: %d %v; want 413 naming %s", c.name, code, m, c.pointer)
		}
		// in the body's terms only: the reason said "… of them in
		// /data/content", a pointer into the event, which the caller
		// never sent (an MCP walkthrough, 2026-12-06)
		if msg := fmt.Sprint(m["error"]); strings.Contains(msg, "/data/") || !strings.Contains(msg, "of them in the "+c.name) {
			t.Errorf("an oversized %s: %q; want the member named as the body's, no /data/ pointer", c.name, msg)
		}
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Big", "description": "d", "content": "c", "outcome": "success"})
	if code != 202 || m["evidence"] != 1.0 {
		t.Fatalf("the recording that fits: %d %v; want 202, the memory's only evidence", code, m)
	}
}
