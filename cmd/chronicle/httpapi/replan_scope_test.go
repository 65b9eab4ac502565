package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A replan naming tools (args.tools) is checked against the tool graphs
// of the scopes the caller reads, as every graph route answers: another
// tenant's tool is refused exactly as a made-up one. Before, the check
// used every scope's graph, so tok-a got a 200 for project:b's secretB1
// and a 400 for a made-up tool, learning which tools project:b has (a
// walkthrough); the tenant itself still replans with its tool.
func TestReplanToolsOfTheCallersScopes(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	var calls []map[string]any
	for i, tool := range []string{"secretB1", "secretB2"} {
		calls = append(calls, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("b-call-%d", i), "source": "test/b", "type": "workflow.task.completed.v1",
			"scope": "project:b", "data": map[string]any{"workflow_id": "wb", "layer": 0, "task_id": fmt.Sprintf("t%d", i), "tool_id": tool, "success": true}})
	}
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", calls); code != 202 {
		t.Fatalf("project:b's tool calls: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	replan := func(token, wf, tool string) (int, map[string]any) {
		return call(t, base, token, "POST", "/v1/workflows/"+wf+"/commands", map[string]any{"command_id": "c-" + tool, "command": "replan_dag", "args": map[string]any{"tools": []string{tool}}})
	}
	code, other := replan("tok-a", "wa", "secretB1")
	_, madeUp := replan("tok-a", "wa", "madeUpTool")
	if code != 400 || !strings.Contains(fmt.Sprint(other["error"]), "is not a tool of the catalogue or the tool graph") ||
		strings.ReplaceAll(fmt.Sprint(other["error"]), "secretB1", "X") != strings.ReplaceAll(fmt.Sprint(madeUp["error"]), "madeUpTool", "X") {
		t.Fatalf("tok-a replanning with project:b's tool: %d %v; a made-up tool: %v; want the same 400", code, other, madeUp)
	}
	if code, m := replan("tok-b", "wb2", "secretB1"); code != 200 {
		t.Fatalf("tok-b replanning with its own tool: %d %v", code, m)
	}
}

// workflow.suggestion.feedback.v1 on POST /v1/events needs a token that
// reads *, as the feedback route does: it moves a policy's threshold.
// Before, tok-a's batch of 60 moved project:a's policy from 0.86 to 0.99
// while the route refused tok-a (a walkthrough).
func TestFeedbackEventsNeedATokenThatReadsAll(t *testing.T) {
	_, _, base := writeOnlyServer(t)
	feedback := func(id string) map[string]any {
		return map[string]any{"specversion": "1.0", "id": id, "source": "test/a", "type": "workflow.suggestion.feedback.v1", "scope": "project:a",
			"data": map[string]any{"policy": "pz", "accepted": false, "mode": "speculative_execution", "confidence": 0.9}}
	}
	code, m := call(t, base, "tok-a", "POST", "/v1/events", []any{feedback("fb-1")})
	if code != 403 || m["pointer"] != "/type" || !strings.Contains(fmt.Sprint(m["error"]), "reads *") {
		t.Fatalf("tok-a's feedback event: %d %v, want 403 at /type", code, m)
	}
	if code, m := call(t, base, "tok-admin", "POST", "/v1/events", []any{feedback("fb-2")}); code != 202 {
		t.Fatalf("tok-admin's feedback event: %d %v", code, m)
	}
}

// A notification sent to /mcp is answered 202 with no body, as MCP's
// Streamable HTTP transport requires, and openapi.json documents that
// status (it listed 200 and the errors only: a conformance check found).
func TestMCPNotificationIs202AsDocumented(t *testing.T) {
	_, _, base := writeOnlyServer(t)
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Authorization", "Bearer tok-a")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a notification: %d, want 202", resp.StatusCode)
	}
}

// A 401's challenge follows RFC 6750 section 3.1: no error code without
// credentials, invalid_request for another scheme, invalid_token for a
// token not known here; the scheme name is case-insensitive (RFC 7235).
// Before, every 401 said Bearer realm="chronicle" alone and "bearer tok-a"
// was refused (a conformance check).
func TestBearerChallenges(t *testing.T) {
	_, _, base := writeOnlyServer(t)
	for _, c := range []struct{ auth, want string }{
		{"", `Bearer realm="chronicle"`},
		{"Basic dTpw", `Bearer realm="chronicle", error="invalid_request", error_description="not a Bearer token"`},
		{"Bearer nope", `Bearer realm="chronicle", error="invalid_token", error_description="unknown bearer token"`},
	} {
		req, _ := http.NewRequest("GET", base+"/v1/sessions", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || got != c.want {
			t.Errorf("Authorization %q: %d %q, want 401 %q", c.auth, resp.StatusCode, got, c.want)
		}
	}
	req, _ := http.NewRequest("GET", base+"/v1/sessions", nil)
	req.Header.Set("Authorization", "bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a lower-case scheme: %d, want 200", resp.StatusCode)
	}
}

// A suggestion with ?scope= and a requirement replan of a workflow search
// only that scope's tool graph (and the bundled catalogue): what they pick
// lands in that scope's answers and state. Before, every scope's graph,
// so an admin's suggestion for project:a offered project:b's private
// tools, and a replan wrote them into project:a's workflow (a workflows
// walkthrough, 2026-11-30).
func TestSuggestAndReplanSearchTheirScopesGraph(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	var calls []map[string]any
	for i, tool := range []string{"secret_lookup", "secret_refund", "secret_notify", "secret_lookup", "secret_refund", "secret_notify"} {
		calls = append(calls, map[string]any{"specversion": "1.0", "id": fmt.Sprintf("b-s-%d", i), "source": "test/b", "type": "workflow.task.completed.v1",
			"scope": "project:b", "data": map[string]any{"workflow_id": fmt.Sprintf("wb%d", i/3), "layer": i % 3, "task_id": fmt.Sprintf("t%d", i), "tool_id": tool, "success": true}})
	}
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", calls); code != 202 {
		t.Fatalf("project:b's tool calls: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	suggest := func(scope string) string {
		code, m := call(t, base, "tok-admin", "POST", "/v1/workflows/suggest?scope="+scope, map[string]any{"intent": "secret refund lookup notify", "k": 5})
		if code != 200 {
			t.Fatalf("suggest in %s: %d %v", scope, code, m)
		}
		return fmt.Sprint(m)
	}
	if got := suggest("project:b"); !strings.Contains(got, "secret_") {
		t.Fatalf("project:b's own suggestion lacks its tools, so the test shows nothing: %s", got)
	}
	if got := suggest("project:a"); strings.Contains(got, "secret_") {
		t.Fatalf("project:a's suggestion offers project:b's tools: %s", got)
	}
	code, m := call(t, base, "tok-admin", "POST", "/v1/workflows/wa9/commands?scope=project:a", map[string]any{"command_id": "r1", "command": "replan_dag", "args": map[string]any{"requirement": "secret refund lookup notify", "k": 1}})
	if code != 200 {
		t.Fatalf("replan in project:a: %d %v", code, m)
	}
	if strings.Contains(fmt.Sprint(m), "secret_") {
		t.Fatalf("project:a's replan picked project:b's tools: %v", m)
	}
}
