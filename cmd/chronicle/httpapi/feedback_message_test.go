package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
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

// A signal stored for consensus that makes its source the memory's third
// distinct caller says that the next signal, its own source's included,
// applies alone: it said a second source was needed, and the same
// caller's next click then pruned the memory (a passes walkthrough,
// 2026-12-06).
func TestFeedbackAnswerSaysWhenTheNextSignalAppliesAlone(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{}
	for _, n := range []string{"a1", "a2", "a3"} {
		tokens.Tokens = append(tokens.Tokens, access.Token{Name: n, SHA256: access.Hash("tok-" + n), Read: []string{"project:a"}, Write: []string{"project:a"}})
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	t.Cleanup(srv.Close)
	code, rec := call(t, srv.URL, "tok-a1", "POST", "/v1/memories", map[string]any{"title": "Quote the fare rules first",
		"description": "Read the fare rules before a change.", "content": "Read the fare rules, then confirm the change with the user.",
		"outcome": "success", "scope": "project:a"})
	if code != 202 {
		t.Fatalf("recording: %d %v", code, rec)
	}
	id, _ := rec["id"].(string)
	waitCaughtUp(t, p)
	feedback := func(token string) string {
		t.Helper()
		code, fb := call(t, srv.URL, token, "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
		if code != 200 {
			t.Fatalf("feedback as %s: %d %v", token, code, fb)
		}
		return fmt.Sprint(fb["message"])
	}
	if msg := feedback("tok-a1"); !strings.HasPrefix(msg, "signal stored; confidence moves once 2 agreeing signals") {
		t.Fatalf("a1's signal: %q, want it stored for consensus", msg)
	}
	if msg := feedback("tok-a2"); !strings.HasPrefix(msg, "signal applied with 1 stored signal(s)") {
		t.Fatalf("a2's signal: %q, want consensus with a1's", msg)
	}
	msg := feedback("tok-a3")
	if !strings.HasPrefix(msg, "signal stored: consensus was needed when it arrived (fewer than 3 distinct callers had used the memory), and it made 3: from now on one signal from any source, this one's included, applies alone") {
		t.Fatalf("a3's first signal: %q, want it said that the next signal applies alone", msg)
	}
	if msg := feedback("tok-a3"); !strings.HasPrefix(msg, "signal applied: confidence") {
		t.Fatalf("a3's second signal: %q, want it applied alone, as the first answer said", msg)
	}
}
