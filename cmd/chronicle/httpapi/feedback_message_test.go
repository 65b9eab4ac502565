package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// A feedback's answer says what the signal will do: a second vote of a
// source whose first is still pending brings consensus no nearer (it said
// "signal stored", and consensus then consumed it as a repeat), and a
// signal applied together with stored ones says so (it read as this
// signal's own move). A walkthrough, 2026-12-06.
func TestFeedbackAnswerSaysWhatTheSignalDoes(t *testing.T) {
	p, _, base := scopedServer(t)
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Quote the fare rules first",
		"description": "Read the fare rules before a change.", "content": "Read the fare rules, then confirm the change with the user.",
		"outcome": "success", "scope": "project:a"})
	if code != 202 {
		t.Fatalf("recording: %d %v", code, rec)
	}
	id, _ := rec["id"].(string)
	waitCaughtUp(t, p)
	feedback := func(token string) string {
		t.Helper()
		code, fb := call(t, base, token, "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
		if code != 200 {
			t.Fatalf("feedback as %s: %d %v", token, code, fb)
		}
		return fmt.Sprint(fb["message"])
	}
	if msg := feedback("tok-a"); !strings.HasPrefix(msg, "signal stored; confidence moves once 2 agreeing signals") {
		t.Fatalf("the first signal: %q, want it stored for consensus", msg)
	}
	if msg := feedback("tok-a"); !strings.Contains(msg, "brings consensus no nearer") || !strings.Contains(msg, "one vote per source") {
		t.Fatalf("the same source's second signal: %q, want it said that it adds no vote", msg)
	}
	if msg := feedback("tok-admin"); !strings.HasPrefix(msg, "signal applied with 1 stored signal(s) it agreed with (consensus") {
		t.Fatalf("another source's agreeing signal: %q, want it applied with the stored one, said so", msg)
	}
}
