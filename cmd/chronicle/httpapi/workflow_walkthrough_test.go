package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// TestWorkflowWriteGoesWhereTheURLReads: a write without ?scope= goes to
// the workflow the same URL reads, the one scope the caller reads that
// holds the id, not to the caller's default write scope (found by a new
// user's walkthrough: a write to a workflow of the caller's second scope
// silently started a second workflow of that id in its default scope, and
// every read of the id became a 409). An id the caller sees nowhere still
// starts a workflow in its default write scope; an id in several of its
// scopes is a 409 naming them; one it reads but may not write is a 403.
func TestWorkflowWriteGoesWhereTheURLReads(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		// default write scope project:c; it also writes project:a
		{Name: "ca", SHA256: access.Hash("tok-ca"), Read: []string{"project:c", "project:a", "project:r"}, Write: []string{"project:c", "project:a"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	defer srv.Close()
	do := func(token, method, path, body string) (int, map[string]any) {
		t.Helper()
		if body == "" {
			return call(t, srv.URL, token, method, path, nil)
		}
		return call(t, srv.URL, token, method, path, json.RawMessage(body))
	}
	update := `{"channel":"messages","update":"x"}`
	if code, m := do("tok-ca", "POST", "/v1/workflows/wf1/updates?scope=project:a", update); code != http.StatusOK {
		t.Fatalf("create wf1 in project:a: %d %v", code, m)
	}
	for _, route := range []string{"updates", "decisions", "checkpoints", "complete"} {
		body := map[string]string{
			"updates":     update,
			"decisions":   `{"decision_id":"dz","kind":"agent","question":"go?","layer":0}`,
			"checkpoints": `{"layer":0}`,
			"complete":    `{"outcome":"failure","output":{}}`, // success would wait for dz
		}[route]
		code, m := do("tok-ca", "POST", "/v1/workflows/wf1/"+route, body)
		if code != http.StatusOK {
			t.Fatalf("POST wf1/%s without ?scope=: %d %v", route, code, m)
		}
		if st, _ := m["state"].(map[string]any); st["scope"] != "project:a" {
			t.Fatalf("POST wf1/%s without ?scope= wrote to %v; want project:a, where GET /v1/workflows/wf1 reads", route, st["scope"])
		}
	}
	if _, ok, err := workflows.Get(p.Store, "project:c/wf1"); err != nil || ok {
		t.Fatalf("a second wf1 in the default write scope project:c: %v %v", ok, err)
	}
	if code, m := do("tok-ca", "GET", "/v1/workflows/wf1", ""); code != http.StatusOK || m["scope"] != "project:a" {
		t.Fatalf("GET wf1 after the writes: %d %v", code, m)
	}
	// an id the caller sees nowhere: its default write scope
	if code, m := do("tok-ca", "POST", "/v1/workflows/wf2/updates", update); code != http.StatusOK || m["state"].(map[string]any)["scope"] != "project:c" {
		t.Fatalf("a new workflow without ?scope=: %d %v; want it in project:c", code, m)
	}
	// in two of the caller's scopes: 409 naming them, nothing written
	if code, m := do("tok-ca", "POST", "/v1/workflows/wf2/updates?scope=project:a", update); code != http.StatusOK {
		t.Fatalf("wf2 in project:a: %d %v", code, m)
	}
	if code, m := do("tok-ca", "POST", "/v1/workflows/wf2/updates", update); code != http.StatusConflict {
		t.Fatalf("a write to an id in two of the caller's scopes: %d %v; want 409", code, m)
	}
	// in a scope it reads but may not write: 403, not a new workflow
	if code, m := do("tok-admin", "POST", "/v1/workflows/wf3/updates?scope=project:r", update); code != http.StatusOK {
		t.Fatalf("wf3 in project:r: %d %v", code, m)
	}
	if code, m := do("tok-ca", "POST", "/v1/workflows/wf3/updates", update); code != http.StatusForbidden {
		t.Fatalf("a write to a workflow of a scope the caller only reads: %d %v; want 403", code, m)
	}
	if _, ok, err := workflows.Get(p.Store, "project:c/wf3"); err != nil || ok {
		t.Fatalf("a wf3 in project:c: %v %v", ok, err)
	}
}

// TestWorkflowRetriesAfterTheStateMoved: a write retried with its event_id
// is answered as the first one (200, its position) on the routes whose
// own write changes what they check: answering a decision (no longer
// pending), completing (the workflow takes no more events) and forking
// (the new workflow exists). Found by a new user's walkthrough: the
// retries answered 404 and 409. Another write under the id stays a 409.
func TestWorkflowRetriesAfterTheStateMoved(t *testing.T) {
	_, post, _ := workflowAPI(t)
	must := func(path, body string) map[string]any {
		t.Helper()
		code, m := post(path, body)
		if code != http.StatusOK {
			t.Fatalf("POST %s %s: %d %v", path, body, code, m)
		}
		return m
	}
	must("/v1/workflows/w/updates", `{"channel":"messages","update":"x"}`)
	cp := must("/v1/workflows/w/checkpoints", `{"layer":0}`)
	must("/v1/workflows/w/decisions", `{"decision_id":"d1","kind":"human","question":"go?","options":["yes","no"],"layer":1}`)
	for _, c := range []struct{ path, body string }{
		{"/v1/workflows/w/decisions/d1", `{"event_id":"ans-1","answer":"yes","by":"me"}`},
		{"/v1/workflows/w/fork", `{"event_id":"fork-1","checkpoint_id":"` + cp["checkpoint_id"].(string) + `","workflow_id":"w-child"}`},
		{"/v1/workflows/w/complete", `{"event_id":"done-1","outcome":"success","output":{"a":1}}`},
	} {
		first := must(c.path, c.body)
		again := must(c.path, c.body)
		if again["position"] != first["position"] {
			t.Fatalf("retry of POST %s answered position %v; the write is at %v", c.path, again["position"], first["position"])
		}
	}
	if code, m := post("/v1/workflows/w/complete", `{"event_id":"done-1","outcome":"failure","output":{}}`); code != http.StatusConflict || m["pointer"] != "/event_id" {
		t.Fatalf("another write under a used event_id: %d %v; want 409 naming /event_id", code, m)
	}
}

// TestWorkflowWritesTooLarge: a write whose event is above the per-event
// limit, or whose body is above MaxBodyBytes, is a 413 as on POST
// /v1/events. Found by a new user's walkthrough: an update of 990,000
// characters answered 200 (the limit was not checked), one of 1,100,000 a
// 503 "not acknowledged by the broker … MESSAGE_TOO_LARGE", which invites
// retries that can never succeed, and a 5 MB body a 400.
func TestWorkflowWritesTooLarge(t *testing.T) {
	_, post, logged := workflowAPI(t)
	if code, m := post("/v1/workflows/big/updates", `{"channel":"messages","update":"x"}`); code != http.StatusOK {
		t.Fatalf("a small update: %d %v", code, m)
	}
	before := logged()
	for _, n := range []int{990_000, 1_100_000} {
		body := `{"channel":"messages","update":"` + strings.Repeat("x", n) + `"}`
		if code, m := post("/v1/workflows/big/updates", body); code != http.StatusRequestEntityTooLarge || m["pointer"] != "/" {
			t.Fatalf("an update of %d characters: %d %v; want 413 naming the event limit", n, code, m)
		}
	}
	if code, m := post("/v1/workflows/big/updates", `{"channel":"messages","update":"`+strings.Repeat("x", httpapi.MaxBodyBytes)+`"}`); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body above MaxBodyBytes: %d %v; want 413", code, m)
	}
	if got := logged(); got != before {
		t.Fatalf("the refused writes reached the log: %d records, %d before", got, before)
	}
}

// A write that would grow a workflow's state above the server's bound is
// a 413 naming the body's member, and nothing reaches the log; writes
// within it pass (the bound is lowered here to 8 KiB: before, every write
// passed, and each event of a 17 MB state rewrote its 17 MB row). A state
// already above the bound: TestStateBoundLetsAStateAboveItEnd.
func TestWorkflowStateBound(t *testing.T) {
	_, post, logged := workflowAPIWith(t, func(s *httpapi.Server) { s.WorkflowStateMax = 8 << 10 })
	update := `{"channel":"messages","update":"` + strings.Repeat("x", 3000) + `"}`
	for i := range 2 {
		if code, m := post("/v1/workflows/b/updates", update); code != http.StatusOK {
			t.Fatalf("update %d: %d %v", i, code, m)
		}
	}
	before := logged()
	code, m := post("/v1/workflows/b/updates", update)
	if e, _ := m["error"].(string); code != http.StatusRequestEntityTooLarge || m["pointer"] != "/update" || !strings.Contains(e, "8192") {
		t.Fatalf("the update past the bound: %d %v; want 413 naming /update and the bound", code, m)
	}
	if code, m := post("/v1/workflows/b/commands", `{"command_id":"c1","command":"inject_tasks","args":{"text":"`+strings.Repeat("y", 5000)+`"}}`); code != http.StatusRequestEntityTooLarge || m["pointer"] != "/args" {
		t.Fatalf("a command past the bound: %d %v; want 413 naming /args", code, m)
	}
	if got := logged(); got != before {
		t.Fatalf("the refused writes reached the log: %d records, %d before", got, before)
	}
	// a smaller update fits; then a checkpoint, a resume and the end
	if code, m := post("/v1/workflows/b/updates", `{"channel":"messages","update":"`+strings.Repeat("z", 1500)+`"}`); code != http.StatusOK {
		t.Fatalf("an update within the bound: %d %v", code, m)
	}
	for _, c := range []struct{ route, body string }{{"checkpoints", `{"layer":1}`}, {"resume", `{}`}, {"complete", `{"outcome":"success"}`}} {
		if code, m := post("/v1/workflows/b/"+c.route, c.body); code != http.StatusOK {
			t.Fatalf("%s of a workflow near its bound: %d %v", c.route, code, m)
		}
	}
}

// A checkpoint's processed_commands: a command named twice is a 400 at its
// index, an empty id the schema's 400 (both answered 409 "not pending"
// before: found by a new user's walkthrough).
func TestCheckpointCommandListErrors(t *testing.T) {
	_, post, _ := workflowAPI(t)
	if code, m := post("/v1/workflows/c/commands", `{"command_id":"rp3","command":"approve","by":"me"}`); code != http.StatusOK {
		t.Fatalf("enqueue: %d %v", code, m)
	}
	for _, c := range []struct{ body, pointer string }{
		{`{"layer":1,"processed_commands":["rp3","rp3"]}`, "/processed_commands/1"},
		{`{"layer":1,"processed_commands":[""]}`, "/processed_commands/0"},
	} {
		if code, m := post("/v1/workflows/c/checkpoints", c.body); code != http.StatusBadRequest || m["pointer"] != c.pointer {
			t.Fatalf("checkpoint %s: %d %v; want 400 at %s", c.body, code, m, c.pointer)
		}
	}
	if code, m := post("/v1/workflows/c/checkpoints", `{"layer":1,"processed_commands":["rp3"]}`); code != http.StatusOK {
		t.Fatalf("the command named once: %d %v", code, m)
	}
}

// A resume from a checkpoint at the largest layer has no next layer: 409,
// not a next_layer wrapped to the smallest integer (found by a new user's
// walkthrough).
func TestResumeAtTheLargestLayer(t *testing.T) {
	_, post, _ := workflowAPI(t)
	if code, m := post("/v1/workflows/top/checkpoints", `{"layer":9223372036854775807}`); code != http.StatusOK {
		t.Fatalf("checkpoint: %d %v", code, m)
	}
	if code, m := post("/v1/workflows/top/resume", `{}`); code != http.StatusConflict {
		t.Fatalf("resume: %d %v; want 409", code, m)
	}
}

// Suggestion feedback names every required field left out at once
// (found by a new user's walkthrough: {"accepted":true} named confidence
// only, and the next try learned that mode was missing too).
func TestSuggestionFeedbackNamesEveryMissingField(t *testing.T) {
	_, post, _ := workflowAPI(t)
	code, m := post("/v1/workflows/suggest/feedback", `{"accepted":true}`)
	e, _ := m["error"].(string)
	if code != http.StatusBadRequest || !strings.Contains(e, "confidence: required") || !strings.Contains(e, "mode: required") || strings.Contains(e, "accepted: required") {
		t.Fatalf("feedback without confidence and mode: %d %q; want 400 naming both", code, e)
	}
}

// A write may not start a workflow "suggest", nor fork into one: GET
// /v1/workflows/suggest is the suggestion route's path (a 405, Allow:
// POST), so its state could never be read there. Before, the write was
// accepted (200) and the workflow unreadable at its own URL.
func TestWorkflowIDSuggestIsRefused(t *testing.T) {
	_, srv := setup(t)
	do := func(path, body string) (int, map[string]any) {
		t.Helper()
		return call(t, srv.URL, "", "POST", path, json.RawMessage(body))
	}
	update := `{"channel":"messages","update":"x"}`
	code, m := do("/v1/workflows/suggest/updates", update)
	if msg, _ := m["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, `"suggest"`) || !strings.Contains(msg, "reserved") {
		t.Fatalf("start workflow suggest: %d %v; want 400 saying the id is reserved", code, m)
	}
	if code, m := do("/v1/workflows/wf-s/updates", update); code != http.StatusOK {
		t.Fatalf("start wf-s: %d %v", code, m)
	}
	code, m = do("/v1/workflows/wf-s/checkpoints", `{"layer":0}`)
	if code != http.StatusOK {
		t.Fatalf("checkpoint wf-s: %d %v", code, m)
	}
	cp, _ := m["checkpoint_id"].(string)
	code, m = do("/v1/workflows/wf-s/fork", `{"workflow_id":"suggest","checkpoint_id":"`+cp+`"}`)
	if msg, _ := m["error"].(string); code != http.StatusBadRequest || !strings.HasPrefix(msg, "workflow_id: ") || !strings.Contains(msg, "reserved") {
		t.Fatalf("fork into workflow suggest: %d %v; want 400 naming workflow_id", code, m)
	}
}
