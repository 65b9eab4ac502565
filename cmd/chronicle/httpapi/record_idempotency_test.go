package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// A client that retries POST /v1/memories after losing the answer (a 504
// from a cluster member forwarding it, a timeout, a dropped connection)
// wrote a second memory.recorded.v1 with a new id, and the memory got its
// evidence twice. With an Idempotency-Key header the recording's event id
// derives from the key, the scope and the token, so the retry is the same
// event: answered 202 with the memory as the first request was, evidence
// still 1, one change in the memory's history. The same key with another
// body is a 422 naming the header; another token's same key is its own
// recording; a retry without a key still counts twice (as documented).
func TestRecordRetryWithIdempotencyKeyCountsOnce(t *testing.T) {
	p, _, base := scopedServer(t)
	body := `{"title": "Check the fare rules", "description": "Before changing a flight, read its fare rules.", "content": "Look up the reservation, then its fare rules.", "outcome": "success"}`
	post := func(token, body string, hdr ...string) (int, map[string]any) {
		t.Helper()
		code, b := postJSON(t, base, token, "/v1/memories", body, hdr...)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return code, m
	}
	evidence := func(id string) (float64, int) {
		t.Helper()
		waitCaughtUp(t, p)
		code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+url.PathEscape(id), nil)
		if code != 200 {
			t.Fatalf("GET the memory %s: %d %v", id, code, m)
		}
		_, hist := call(t, base, "tok-a", "GET", "/v1/memories/"+url.PathEscape(id)+"/history", nil)
		changes, _ := hist["changes"].([]any)
		return m["evidence"].(float64), len(changes)
	}

	code, first := post("tok-a", body, "Idempotency-Key", "rec-7c1e")
	if code != 202 || first["merged_into"] != nil {
		t.Fatalf("the first request: %d %v; want 202, a new memory", code, first)
	}
	id, _ := first["id"].(string)
	for _, key := range []string{"rec-7c1e", `"rec-7c1e"`} { // bare, and as a Structured Field String
		code, again := post("tok-a", body, "Idempotency-Key", key)
		if code != 202 || again["id"] != id || again["message"] != first["message"] || again["evidence"] != first["evidence"] || again["merged_into"] != nil {
			t.Fatalf("the retry with Idempotency-Key %s: %d %v; want 202 answered as the first request: %v", key, code, again, first)
		}
	}
	if ev, changes := evidence(id); ev != 1 || changes != 1 {
		t.Fatalf("after two retries under the key: evidence %v, %d changes; want 1 and 1 (the retries are the first recording)", ev, changes)
	}
	want := memories.RecordEventID("project:a", "token:a", "rec-7c1e")
	if applied, same, err := p.Store.AppliedContent(memories.Name, &events.Envelope{Source: memories.ToolsSource, ID: want, Scope: "project:a"}); err != nil || !applied {
		t.Fatalf("the recording's event %s applied: %v %v %v", want, applied, same, err)
	}

	// the key with another body: 422 naming the header, nothing written
	other := strings.Replace(body, "then its fare rules", "then the fare class", 1)
	if code, m := post("tok-a", other, "Idempotency-Key", "rec-7c1e"); code != 422 || !strings.Contains(m["error"].(string), "Idempotency-Key") || !strings.Contains(m["error"].(string), "rec-7c1e") {
		t.Fatalf("the key with another body: %d %v; want 422 naming Idempotency-Key and the key", code, m)
	}
	// a malformed key: 400 naming the header
	if code, m := post("tok-a", body, "Idempotency-Key", `"unterminated`); code != 400 || !strings.Contains(m["error"].(string), "Idempotency-Key") {
		t.Fatalf("a malformed key: %d %v; want 400 naming Idempotency-Key", code, m)
	}

	// another token's key is its own: a second recording, merged
	if code, m := post("tok-admin", strings.Replace(body, `"outcome"`, `"scope": "project:a", "outcome"`, 1), "Idempotency-Key", "rec-7c1e"); code != 202 || m["merged_into"] != id {
		t.Fatalf("another token's request under the same key: %d %v; want 202 merged into %s", code, m, id)
	}
	// without a key a retry is another recording, as before (README)
	if code, m := post("tok-a", body); code != 202 || m["merged_into"] != id {
		t.Fatalf("a request without a key: %d %v; want 202 merged into %s", code, m, id)
	}
	if ev, _ := evidence(id); ev != 3 {
		t.Fatalf("evidence after another token's and a keyless recording: %v; want 3", ev)
	}

	// a retry sent while the first request still waits for the memory
	// bank (the first one's answer is the one a 504 lost): both write the
	// same event, the memory bank drops the second, both answer the memory
	twice := strings.Replace(body, "Check the fare rules", "Check the baggage rules", 1)
	answers := make(chan map[string]any, 2)
	for range 2 {
		go func() {
			code, b := postJSON(t, base, "tok-a", "/v1/memories", twice, "Idempotency-Key", "rec-concurrent")
			m := map[string]any{}
			_ = json.Unmarshal(b, &m)
			m["code"] = code
			answers <- m
		}()
	}
	a1, a2 := <-answers, <-answers
	if a1["code"] != 202 || a2["code"] != 202 || a1["id"] != a2["id"] || a1["merged_into"] != nil || a2["merged_into"] != nil {
		t.Fatalf("two concurrent requests under one key: %v and %v; want 202 twice, the same new memory", a1, a2)
	}
	if ev, changes := evidence(a1["id"].(string)); ev != 1 || changes != 1 {
		t.Fatalf("after two concurrent requests under one key: evidence %v, %d changes; want 1 and 1", ev, changes)
	}

	// the Go client sends the key and maps the 422 to search.ErrKeyReused
	c := &httpapi.Client{Base: base, Token: "tok-a"}
	r := search.Record{Title: "Check the fare rules", Description: "Before changing a flight, read its fare rules.", Content: "Look up the reservation, then its fare rules.",
		Outcome: "success", Scope: "project:a", IdempotencyKey: "rec-7c1e"}
	if got, err := c.Record(context.Background(), r); err != nil || got.ID != id || got.MergedInto != "" {
		t.Fatalf("Client.Record retrying under the key: %+v %v; want the first answer, memory %s", got, err, id)
	}
	r.Content = "Look up the reservation, then the fare class."
	if _, err := c.Record(context.Background(), r); !errors.Is(err, search.ErrKeyReused) {
		t.Fatalf("Client.Record with the key and other content: %v; want search.ErrKeyReused", err)
	}
	if ev, _ := evidence(id); ev != 3 {
		t.Fatalf("evidence after the client's retry: %v; want 3", ev)
	}
}
