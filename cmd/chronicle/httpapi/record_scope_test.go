package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRecordingMalformedScopeIsA400NamingScope: POST /v1/memories with a
// scope that is no scope is a 400 naming scope and the reason, as the
// ?scope= parameters answer, with or without a token and whatever the
// token writes. Before, "bogus" was a 400 about a derived
// memory.created.v1 event's envelope without a token and a 403 "may not
// write bogus" with one (found by a new user's walkthrough).
func TestRecordingMalformedScopeIsA400NamingScope(t *testing.T) {
	const rec = `"title":"x","description":"d","content":"c","outcome":"success"`
	_, post, _ := workflowAPI(t)
	for _, sc := range []string{"bogus", "project:", "project:a b", "*"} {
		code, m := post("/v1/memories", `{`+rec+`,"scope":"`+sc+`"}`)
		msg, _ := m["error"].(string)
		want := fmt.Sprintf("scope: %q is not project:<id>, team:<id> or org:<id>", sc)
		if code != http.StatusBadRequest || !strings.HasPrefix(msg, want) {
			t.Errorf("POST /v1/memories scope %q without tokens: %d %q; want 400 %q", sc, code, msg, want)
		}
	}
	_, _, base := scopedServer(t)
	for _, tok := range []string{"tok-a", "tok-admin"} {
		code, m := call(t, base, tok, "POST", "/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "success", "scope": "bogus"})
		if msg := fmt.Sprint(m["error"]); code != http.StatusBadRequest || !strings.HasPrefix(msg, `scope: "bogus" is not`) {
			t.Errorf("POST /v1/memories scope bogus with %s: %d %q; want 400 naming scope", tok, code, msg)
		}
	}
	// a well-formed scope the token does not write stays a 403
	if code, m := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "success", "scope": "project:b"}); code != http.StatusForbidden {
		t.Errorf("POST /v1/memories scope project:b with tok-a: %d %v; want 403", code, m)
	}
}
