package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRouteErrorsNamePointerAndReason: a refused member is answered
// {error, pointer, reason}, worded for the route called, on the routes an
// agent-runtime walkthrough found without: POST /v1/memories' required
// members and scope (README promised the pointer; "invalid argument:
// description: required …" had none), POST /v1/workflows/suggest's k (11
// was "invalid suggestion request: k: 11 …", 0 "k: 0 …", neither with a
// pointer) and a replan_dag command's args (they said "invalid suggestion
// request" although the request was a command); then POST /v1/dags and
// POST /v1/searches/{id}/resume.
func TestRouteErrorsNamePointerAndReason(t *testing.T) {
	_, c, _ := startAt(t, t.TempDir())
	for _, tc := range []struct {
		path    string
		body    any
		pointer string
		error   string
	}{
		{"/v1/memories", map[string]any{"title": "x"}, "/description", "/description: required, at most 200 characters"},
		{"/v1/memories", map[string]any{"title": "x", "description": "d", "outcome": "success"}, "/content", "/content: required"},
		{"/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "maybe"}, "/outcome", `/outcome: "maybe" is not success or failure`},
		// a missing outcome said `"" is not success or failure` (a walkthrough, 2026-11-30)
		{"/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c"}, "/outcome", `/outcome: required: success or failure`},
		{"/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "success", "scope": "bogus"}, "/scope", `scope: "bogus" is not project:<id>, team:<id> or org:<id>`},
		{"/v1/workflows/suggest", map[string]any{"intent": "x", "k": 11}, "/k", "k: 11 is not from 1 to 10 (leave it out for the default 3)"},
		{"/v1/workflows/suggest", map[string]any{"intent": "x", "k": 0}, "/k", "k: 0 is not from 1 to 10 (leave it out for the default 3)"},
		{"/v1/workflows/suggest", map[string]any{"k": 2}, "/intent", "intent: required (or context_tools)"},
		{"/v1/workflows/suggest", map[string]any{"intent": "x", "context_tools": []string{"nope"}}, "/context_tools/0", `context_tools[0]: "nope" is not a tool of the catalogue or the tool graph`},
		{"/v1/workflows/suggest", map[string]any{"intent": "x", "estimates": map[string]any{"cancel_reservation": map[string]any{"cost_usd": -0.5}}}, "/estimates/cancel_reservation/cost_usd", "estimates.cancel_reservation.cost_usd: -0.5 is not a cost ≥ 0"},
		{"/v1/workflows/w-err/commands", map[string]any{"command": "replan_dag", "args": map[string]any{"tools": []string{"launch_rocket"}}}, "/args/tools/0", `args.tools[0]: "launch_rocket" is not a tool of the catalogue or the tool graph`},
		{"/v1/workflows/w-err/commands", map[string]any{"command": "replan_dag", "args": map[string]any{}}, "/args/requirement", "args.requirement: required for replan_dag (or args.tools)"},
		{"/v1/workflows/w-err/commands", map[string]any{"command": "replan_dag", "args": map[string]any{"requirement": "book", "k": 11}}, "/args/k", "args.k: 11 is not from 1 to 10 (leave it out for the default 3)"},
		// POST /v1/dags and a search's resume answered these without the
		// pointer and the reason (a walkthrough, 2026-11-30)
		{"/v1/dags", map[string]any{"tools": []string{}}, "/tools", "tools: at least one tool name or {name, parameters, output} is required"},
		{"/v1/dags", map[string]any{"tools": []string{"think"}, "rule": "fuzzy"}, "/rule", `rule: "fuzzy" is not exact or exact_or_plural_id`},
		{"/v1/dags", map[string]any{"tools": []string{"think", ""}}, "/tools/1", "tools[1]: an empty tool name"},
		{"/v1/dags", map[string]any{"tools": []string{"think", "launch_rocket"}}, "/tools/1", `tools[1]: unknown tool "launch_rocket": not in the bundled airline catalogue and not declared as {name, parameters, output}`},
		{"/v1/dags", map[string]any{"tools": []any{"think", map[string]any{"name": "a", "parameters": "str"}}}, "/tools/1/parameters", "tools[1].parameters: a JSON Schema object, got string"},
		{"/v1/dags", map[string]any{"tools": []any{map[string]any{"description": "d"}}}, "/tools/0/name", "tools[0].name: required, a non-empty string"},
		{"/v1/dags", map[string]any{"tools": []any{map[string]any{"name": "a", "outputs": map[string]any{}}}}, "/tools/0", `tools[0]: unknown member "outputs" (name, description, parameters, output)`},
		{"/v1/searches/s-err/resume", map[string]any{"decision": "maybe"}, "/decision", `decision: "maybe" is not approve or reject`},
		// a required member left out was refused as its empty value
		// ("channel: value must be one of …": a workflows walkthrough,
		// 2026-12-06)
		{"/v1/workflows/w-err/commands", map[string]any{"command": "replan_dag", "args": map[string]any{"tools": "think"}}, "/args/tools", `args: "tools": got string, want array (replan_dag takes requirement, k, or tools)`},
		{"/v1/workflows/w-err/updates", map[string]any{}, "/channel", "channel: required by POST /v1/workflows/w-err/updates"},
		{"/v1/workflows/w-err/updates", map[string]any{"channel": "tasks"}, "/update", "update: required by POST /v1/workflows/w-err/updates"},
		{"/v1/workflows/w-err/commands", map[string]any{"args": map[string]any{}}, "/command", "command: required by POST /v1/workflows/w-err/commands"},
		{"/v1/workflows/w-err/decisions", map[string]any{"kind": "human"}, "/question", "question: required by POST /v1/workflows/w-err/decisions"},
		{"/v1/workflows/w-err/complete", map[string]any{}, "/outcome", "outcome: required by POST /v1/workflows/w-err/complete"},
	} {
		code, m := call(t, c.Base, "", "POST", tc.path, tc.body)
		msg := fmt.Sprint(m["error"])
		reason := fmt.Sprint(m["reason"])
		if code != http.StatusBadRequest || m["pointer"] != tc.pointer || !strings.HasSuffix(msg, tc.error) || !strings.HasSuffix(tc.error, reason) || reason == "" || strings.Contains(msg, "suggestion request") {
			t.Errorf("POST %s %v: %d %v; want 400 %q, pointer %s and its reason", tc.path, tc.body, code, m, tc.error, tc.pointer)
		}
	}
}

// POST /v1/memories with a scope the token may not write: the 403 names
// the body's member, as POST /v1/events' names /scope (it had neither
// pointer nor reason: a producer's walkthrough, 2026-11-30).
func TestMemoryScopeNotWritableNamesIt(t *testing.T) {
	_, _, base := scopedServer(t)
	code, m := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "success", "scope": "project:b"})
	if code != http.StatusForbidden || m["pointer"] != "/scope" || m["reason"] != "scope not writable" || !strings.Contains(fmt.Sprint(m["error"]), "may not write project:b") {
		t.Fatalf("POST /v1/memories into project:b with tok-a: %d %v; want 403 naming /scope", code, m)
	}
}

// ?scope= on POST /v1/memories and POST /v1/events is refused, saying
// where a scope goes: it was ignored, and the write went into the token's
// default write scope, which others may read (a security review,
// 2026-11-30); nothing is written.
func TestWriteRoutesRefuseScopeQuery(t *testing.T) {
	_, _, base := scopedServer(t)
	code, m := call(t, base, "tok-a", "POST", "/v1/memories?scope=project:c", map[string]any{"title": "x", "description": "d", "content": "c", "outcome": "success"})
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), "scope: not a query parameter of POST /v1/memories") {
		t.Errorf("POST /v1/memories?scope=: %d %v; want 400 saying the scope goes in the body", code, m)
	}
	ev := map[string]any{"specversion": "1.0", "id": "sq-1", "source": "test/sq", "type": "coordination.minute.recorded.v1", "sessionid": "sq-s",
		"data": map[string]any{"event_type": "m", "actor": "a", "data": map[string]any{}}}
	code, m = call(t, base, "tok-a", "POST", "/v1/events?scope=project:c", []any{ev})
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), "scope: not a query parameter of POST /v1/events") {
		t.Errorf("POST /v1/events?scope=: %d %v; want 400 saying where an event's scope goes", code, m)
	}
}
