package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pair"
)

// POST /v1/events holds the memory bank's author fields to the caller: a
// feedback or usage claiming another source, a recording under another
// author, or a usage counted by a session are refused (403 naming the
// field) and nothing is written; an event without an author gets the
// token's, so its history names who wrote it.
func TestEventsCarryTheCallerAsAuthor(t *testing.T) {
	p, _, base := scopedServer(t)
	ev := func(id string, typ events.Type, data map[string]any) map[string]any {
		return map[string]any{"specversion": "1.0", "id": id, "source": "test/author", "type": string(typ), "scope": "project:a", "data": data}
	}
	refused := []struct {
		name, pointer string
		body          any
	}{
		{"a feedback posing as another token", "/data/source", ev("f1", events.MemoryFeedback, map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": true, "source": "token:admin"})},
		{"a usage from a made-up source", "/data/source", ev("u1", events.MemoryRetrieved, map[string]any{"memory_id": "m1", "source": "token:ghost1"})},
		{"a usage counted by a session", "/data/session_id", ev("u2", events.MemoryRetrieved, map[string]any{"memory_id": "m1", "session_id": "s-1"})},
		{"a recording under another author", "/data/recorded_by", ev("r1", events.MemoryRecorded, map[string]any{"memory_id": "m9", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit", "recorded_by": "token:admin"})},
		{"the second event of a batch", "/data/source", []any{ev("f2", events.MemoryFeedback, map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": true}),
			ev("f3", events.MemoryFeedback, map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": true, "source": "session:x"})}},
	}
	for _, c := range refused {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", c.body); code != 403 || m["pointer"] != c.pointer || !strings.Contains(m["error"].(string), "token:a") {
			t.Errorf("%s: %d %v; want 403 naming %s", c.name, code, m, c.pointer)
		}
	}
	// accepted: no author (set to the token's), or the token's own
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []any{
		ev("f4", events.MemoryFeedback, map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": true}),
		ev("f5", events.MemoryFeedback, map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": false, "source": "token:a"}),
	}); code != 202 {
		t.Fatalf("feedback without and with the token's source: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]string{}
	for _, env := range records(ctx, t, p, events.TopicMemories, events.MemoryFeedback) {
		var d events.MemoryFeedbackData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			t.Fatal(err)
		}
		got[env.ID] = d.Source
	}
	if len(got) != 2 || got["f4"] != "token:a" || got["f5"] != "token:a" {
		t.Fatalf("feedback in the log by id → source: %v; want only f4 and f5, both token:a (nothing of the refused requests)", got)
	}
	// a minute under the pair worker's actor would read as that worker's
	// improvement (improved_by): refused; a producer's own actor is not
	minute := func(id, actor string) map[string]any {
		m := ev(id, events.MinuteRecorded, map[string]any{"event_type": "pair_improvement_completed", "actor": actor, "data": map[string]any{"improved_session": "x", "iteration": 2, "memory_id": "mem-1"}})
		m["sessionid"] = "s-minute"
		return m
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", minute("mn1", pair.MinuteActor)); code != 403 || m["pointer"] != "/data/actor" {
		t.Errorf("a minute as %s: %d %v; want 403 naming /data/actor", pair.MinuteActor, code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", minute("mn2", "agent-1")); code != 202 {
		t.Errorf("a producer's minute: %d %v; want 202", code, m)
	}
	// Chronicle's own sources are refused: with one, a token could write
	// the recording another token's Idempotency-Key names (the event id
	// memories.RecordEventID derives) and take that key first
	rec := map[string]any{"memory_id": "m8", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit"}
	for _, src := range []string{"chronicle/memory-tools", "Chronicle/Sessions"} {
		body := ev(memories.RecordEventID("project:a", "token:b", "1"), events.MemoryRecorded, rec)
		body["source"] = src
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", body); code != 403 || m["pointer"] != "/source" {
			t.Errorf("an event with source %s: %d %v; want 403 naming /source", src, code, m)
		}
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", ev("r2", events.MemoryRecorded, rec)); code != 202 {
		t.Errorf("a recording with the producer's own source: %d %v; want 202", code, m)
	}
}

// A read-only token recording a memory without naming a scope is told
// that it writes no scope, not that it may not write org:default, a scope
// it never named.
func TestReadOnlyTokenRecordingIsToldWhy(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{{Name: "reader", SHA256: access.Hash("tok-r"), Read: []string{"project:a"}}}}
	srv := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens}).Handler())
	t.Cleanup(srv.Close)
	code, m := call(t, srv.URL, "tok-r", "POST", "/v1/memories", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success"})
	if code != 403 || !strings.Contains(m["error"].(string), "writes no scope") || strings.Contains(m["error"].(string), "org:default") {
		t.Fatalf("read-only token recording: %d %v", code, m)
	}
	// so is one starting a workflow (it was told "may not write
	// org:default": a walkthrough, 2026-11-30); naming a scope, it is told
	// that scope
	code, m = call(t, srv.URL, "tok-r", "POST", "/v1/workflows/rowf/updates", map[string]any{"channel": "messages", "update": "x"})
	if code != 403 || !strings.Contains(m["error"].(string), "writes no scope") || strings.Contains(m["error"].(string), "org:default") {
		t.Fatalf("read-only token starting a workflow: %d %v", code, m)
	}
	code, m = call(t, srv.URL, "tok-r", "POST", "/v1/workflows/rowf/updates?scope=project:a", map[string]any{"channel": "messages", "update": "x"})
	if code != 403 || !strings.Contains(m["error"].(string), "may not write project:a") {
		t.Fatalf("read-only token starting a workflow in project:a: %d %v", code, m)
	}
}

// A token that reads a memory's scope but does not write it gets a 403
// for feedback on it (feedback is a write), not the 404 that contradicted
// its GET; a memory of a scope it cannot read stays a 404.
func TestFeedbackWithoutWriteIsForbidden(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "writer", SHA256: access.Hash("tok-w"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "reader", SHA256: access.Hash("tok-r"), Read: []string{"project:a"}},
		{Name: "other", SHA256: access.Hash("tok-o"), Read: []string{"project:b"}, Write: []string{"project:b"}},
	}}
	srv := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens}).Handler())
	t.Cleanup(srv.Close)
	code, m := call(t, srv.URL, "tok-w", "POST", "/v1/memories", map[string]any{"title": "Feedback rights", "description": "d", "content": "c", "outcome": "success"})
	if code != 202 {
		t.Fatalf("record: %d %v", code, m)
	}
	id, _ := m["id"].(string)
	waitCaughtUp(t, p)
	if code, m = call(t, srv.URL, "tok-r", "GET", "/v1/memories/"+id, nil); code != 200 {
		t.Fatalf("reader GET: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "tok-r", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": true}); code != 403 || !strings.Contains(m["error"].(string), "may not write") {
		t.Fatalf("reader feedback: %d %v; want 403", code, m)
	}
	if code, m = call(t, srv.URL, "tok-o", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": true}); code != 404 {
		t.Fatalf("another scope's token: %d %v; want 404", code, m)
	}
}

// One event sent through two tokens (a token rotated between a send and
// its retry) is one event: the author POST /v1/events sets from the
// caller is no part of its content (projections.ContentHash, dedup
// version 6), so the resends are plain duplicates and the first author
// stands. Before, each resend was answered 202 and then dead-lettered as
// a conflicting duplicate (a producer walkthrough's finding). An event
// with other content under the same id still is one, and is the only
// letter.
func TestResendThroughAnotherTokenIsADuplicate(t *testing.T) {
	p, _, base := scopedServer(t)
	rec := func(title string) map[string]any {
		return map[string]any{"specversion": "1.0", "id": "rec-1", "source": "test/rotating", "type": string(events.MemoryRecorded), "scope": "project:a",
			"data": map[string]any{"memory_id": "m-rotated", "title": title, "description": "d", "content": "c", "outcome": "success", "source": "explicit"}}
	}
	for _, tok := range []string{"tok-a", "tok-wo", "tok-admin"} {
		if code, m := call(t, base, tok, "POST", "/v1/events", rec("Ask for the booking code first")); code != 202 {
			t.Fatalf("the recording through %s: %d %v", tok, code, m)
		}
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", rec("Another title")); code != 202 {
		t.Fatalf("a recording with other content under the id: %d %v", code, m)
	}
	letters := waitDeadLetters(t, p, base, "tok-admin", "", 1)
	if len(letters) != 1 || !strings.Contains(letters[0]["reason"].(string), "conflicting duplicate") {
		t.Fatalf("dead letters: %v; want only the recording with other content (a conflicting duplicate), none of the resends", letters)
	}
	code, m := call(t, base, "tok-a", "GET", "/v1/memories/m-rotated/history", nil)
	if code != 200 || !strings.Contains(fmt.Sprint(m), "token:a") || strings.Contains(fmt.Sprint(m), "token:wo") || strings.Contains(fmt.Sprint(m), "token:admin") {
		t.Fatalf("history: %d %v; want the first author, token:a, only", code, m)
	}
}

// Who answered a workflow's decision is the caller, as who resumed a
// search: POST /v1/workflows/{id}/decisions/{did} and POST /v1/events
// refuse a by naming another token (403 naming /by and /data/by), and an
// answer without by records the token's name. Before, a project:a token
// recorded "token:admin" as the approver of a human decision, and an
// answer without by recorded none (a workflows walkthrough's finding).
func TestDecisionAnswerCarriesTheCaller(t *testing.T) {
	p, _, base := scopedServer(t)
	wf := "/v1/workflows/wire?scope=project:a"
	post := func(path, body string) (int, map[string]any) {
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		return call(t, base, "tok-a", "POST", path, m)
	}
	if code, m := post(strings.Replace(wf, "?", "/decisions?", 1), `{"decision_id":"d","kind":"human","question":"Wire $9000?","options":["approve","reject"],"layer":0}`); code != 200 {
		t.Fatalf("the decision: %d %v", code, m)
	}
	answer := strings.Replace(wf, "?", "/decisions/d?", 1)
	if code, m := post(answer, `{"answer":"approve","by":"token:admin"}`); code != 403 || m["pointer"] != "/by" {
		t.Fatalf("an answer by another token: %d %v; want 403 naming /by", code, m)
	}
	ev := map[string]any{"specversion": "1.0", "id": "ans-forged", "source": "test/wf", "type": string(events.WorkflowDecisionAnswered), "scope": "project:a",
		"data": map[string]any{"workflow_id": "wire", "decision_id": "d", "answer": "approve", "by": "token:admin"}}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", ev); code != 403 || m["pointer"] != "/data/by" {
		t.Fatalf("the answer's event by another token: %d %v; want 403 naming /data/by", code, m)
	}
	if code, m := post(answer, `{"answer":"approve"}`); code != 200 {
		t.Fatalf("the answer without by: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "GET", "/v1/workflows/wire?scope=project:a", nil)
	if code != 200 || !strings.Contains(fmt.Sprint(m["decisions"]), "token:a") || strings.Contains(fmt.Sprint(m), "token:admin") {
		t.Fatalf("the workflow: %d %v; want its decision answered by token:a", code, m)
	}
}
