// Package accesstest is the access-control conformance suite of Chronicle's
// HTTP API, in the style of Watermill's exported Pub/Sub test suites: a
// table of every route × {no token, wrong token, other scope, write-only,
// own scope}, run against a real server, asserting each status and that no
// response to another scope's token, nor to a token that writes the own
// scope but reads nothing, carries the own scope's data.
//
// Run fails for a registered route that has no Case, so a route added
// later cannot skip the review of who may call it: add its Case to Cases.
package accesstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fixture is a running server with data in two scopes. The own scope
// (OwnScope, e.g. project:a) holds Session and Memory, whose stored text
// contains every string of Secrets; OtherToken reads and writes only
// OtherScope, OwnToken only OwnScope, AdminToken every scope.
// WriteOnlyToken, when set, writes OwnScope and reads nothing (a
// producer): it is the WriteOnly caller of every Case.
type Fixture struct {
	BaseURL                          string
	OwnToken, OtherToken, AdminToken string
	WriteOnlyToken                   string
	OwnScope, OtherScope             string
	Session, Memory                  string
	// Workflow is a workflow of the own scope whose context holds a
	// secret, with a checkpoint (WorkflowCheckpoint, its log position) and
	// a pending human decision (WorkflowDecision).
	Workflow, WorkflowCheckpoint, WorkflowDecision string
	// Search is a paused tree search of the own scope (its goal holds a
	// secret); the own token resumes it.
	Search string
	// Reasoning is a reasoning task of the own scope (its task text
	// contains the secrets too).
	Reasoning string
	// Pattern is a coordination pattern of the own scope (the tool
	// sequence of Session).
	Pattern string
	Secrets []string
	// State returns a digest of the own scope's entities as the own token
	// reads them (session, its events, memory, history); Run requires it
	// unchanged by every request of the other scope's token.
	State func(t *testing.T) string
	// Response, when set, is called with every answer Run receives (every
	// Case as every Caller), e.g. to check it against the OpenAPI
	// description of the route.
	Response func(t *testing.T, req Request, who Caller, resp *http.Response, body []byte)
}

// Caller is who sends a request.
type Caller string

// The callers of every Case (WriteOnly when the Fixture has a
// WriteOnlyToken).
const (
	NoToken    Caller = "no token"
	WrongToken Caller = "wrong token"
	Other      Caller = "other scope"
	// WriteOnly writes the own scope and reads nothing: its writes apply,
	// but no answer, of a read or of a write, carries the own scope's data.
	WriteOnly Caller = "write-only"
	Own       Caller = "own scope"
)

// Request is one concrete request.
type Request struct {
	Method, Path string
	Body         any // marshalled as JSON; nil: no body
}

// Case is a route's row of the table.
type Case struct {
	// Pattern is the route's ServeMux pattern, as Server.Routes lists it.
	Pattern string
	// Write says whether the route changes state.
	Write bool
	// Request is the request about the own scope's entities (for Other it
	// is sent unchanged: another scope's token naming the own scope's ids).
	Request func(f Fixture) Request
	// Public routes answer without a token and show no scoped data.
	Public bool
	// Want is the status each caller gets (NoToken and WrongToken default
	// to 401 unless Public; WriteOnly defaults to Other's status for a
	// read, as a caller that reads none of the own scope's data, and to
	// Own's for a Write, as a writer of the own scope).
	Want map[Caller]int
}

func (c Case) want(who Caller) int {
	if w, ok := c.Want[who]; ok {
		return w
	}
	if who == WriteOnly {
		if c.Write {
			return c.want(Own)
		}
		return c.want(Other)
	}
	if (who == NoToken || who == WrongToken) && !c.Public {
		return http.StatusUnauthorized
	}
	return http.StatusOK
}

func esc(id string) string { return url.PathEscape(id) }

// Cases is the table of Chronicle's routes. Aggregates over every scope
// (the digest, tool search) need a token that reads "*": 403 for both
// scoped tokens. The tool graph routes answer from the graphs of the
// scopes the caller reads.
func Cases() []Case {
	get := func(path func(Fixture) string) func(Fixture) Request {
		return func(f Fixture) Request { return Request{Method: "GET", Path: path(f)} }
	}
	aggregate := map[Caller]int{Own: 403, Other: 403}
	return []Case{
		{Pattern: "POST /v1/events", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/events", Body: []any{minute(f.OwnScope, f.Session, "note from "+string(f.OwnScope))}}
		}, Want: map[Caller]int{Own: 202, Other: 403}},
		{Pattern: "GET /v1/sessions", Request: get(func(Fixture) string { return "/v1/sessions" })},
		{Pattern: "GET /v1/sessions/{id...}", Request: get(func(f Fixture) string { return "/v1/sessions/" + esc(f.Session) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/sessions/{id...}", Request: get(func(f Fixture) string { return "/v1/sessions/" + esc(f.Session) + "/events" }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/sessions/{id...}", Request: get(func(f Fixture) string { return "/v1/sessions/" + esc(f.Session) + "/improvement" }), Want: map[Caller]int{Other: 404}},
		{Pattern: "POST /v1/sessions/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/sessions/" + esc(f.Session) + "/improve", Body: map[string]any{}}
		}, Want: map[Caller]int{Other: 404, WriteOnly: 404}}, // its answer is the PAIR view: read and write
		// the list: 200 for both, the other scope's without the own
		// scope's task (its text is a secret, which the summary carries);
		// naming the own scope: 403 for the other
		{Pattern: "GET /v1/searches", Request: get(func(Fixture) string { return "/v1/searches" })},
		{Pattern: "GET /v1/searches", Request: get(func(f Fixture) string { return "/v1/searches?scope=" + url.QueryEscape(f.OwnScope) }), Want: map[Caller]int{Other: 403}},
		{Pattern: "GET /v1/reasoning", Request: get(func(Fixture) string { return "/v1/reasoning" })},
		{Pattern: "GET /v1/reasoning", Request: get(func(f Fixture) string { return "/v1/reasoning?scope=" + url.QueryEscape(f.OwnScope) }), Want: map[Caller]int{Other: 403}},
		{Pattern: "GET /v1/reasoning/{id...}", Request: get(func(f Fixture) string { return "/v1/reasoning/" + esc(f.Reasoning) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/reasoning/{id...}", Request: get(func(f Fixture) string { return "/v1/reasoning/" + esc(f.Reasoning) + "/history" }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/memories/search", Request: get(func(f Fixture) string {
			return "/v1/memories/search?min_confidence=0&query=" + url.QueryEscape(f.Secrets[0])
		})},
		{Pattern: "GET /v1/patterns/search", Request: get(func(f Fixture) string {
			return "/v1/patterns/search?min_confidence=0&outcome=all&query=" + url.QueryEscape(f.Secrets[0])
		})},
		{Pattern: "GET /v1/tools/search", Request: get(func(Fixture) string { return "/v1/tools/search?query=flight" }), Want: aggregate},
		{Pattern: "POST /v1/memories", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/memories", Body: map[string]any{"title": "Probe", "description": "A probe memory.", "content": "probe", "outcome": "success", "scope": f.OwnScope}}
		}, Want: map[Caller]int{Own: 202, Other: 403}},
		{Pattern: "POST /v1/memories/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/memories/" + esc(f.Memory) + "/feedback", Body: map[string]any{"helpful": true}}
		}, Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/memories/{id...}", Request: get(func(f Fixture) string { return "/v1/memories/" + esc(f.Memory) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/memories/{id...}", Request: get(func(f Fixture) string { return "/v1/memories/" + esc(f.Memory) + "/history" }), Want: map[Caller]int{Other: 404}},
		// the memory list: 200 for both, the other scope's without the own
		// scope's memory (its title is a secret); naming the own scope:
		// 403 for the other
		{Pattern: "GET /v1/memories", Request: get(func(Fixture) string { return "/v1/memories" })},
		{Pattern: "GET /v1/memories", Request: get(func(f Fixture) string { return "/v1/memories?scope=" + url.QueryEscape(f.OwnScope) }), Want: map[Caller]int{Other: 403}},
		// a pattern and its history: another scope's is the 404 of an id
		// no pattern has
		{Pattern: "GET /v1/patterns/{id...}", Request: get(func(f Fixture) string { return "/v1/patterns/" + esc(f.Pattern) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/patterns/{id...}", Request: get(func(f Fixture) string { return "/v1/patterns/" + esc(f.Pattern) + "/history" }), Want: map[Caller]int{Other: 404}},
		// workflows: reads and the writes that need the workflow's past are
		// 404 for the other scope; writes that may start a workflow go to
		// the caller's own scope (the other scope gets its own workflow of
		// that id, and the own one stays unchanged)
		// the list: 200 for both, the other scope's without the own
		// scope's workflows (Run checks that no secret is in it)
		{Pattern: "GET /v1/workflows", Request: get(func(Fixture) string { return "/v1/workflows" })},
		// the dead letters: 200 for both, the other scope's without the own
		// scope's letters (the fixture's own scope holds one whose event id
		// is a secret); naming the own scope: 403 for the other
		{Pattern: "GET /v1/deadletters", Request: get(func(Fixture) string { return "/v1/deadletters" })},
		{Pattern: "GET /v1/deadletters", Request: get(func(f Fixture) string { return "/v1/deadletters?scope=" + url.QueryEscape(f.OwnScope) }), Want: map[Caller]int{Other: 403}},
		{Pattern: "GET /v1/workflows/{id...}", Request: get(func(f Fixture) string { return "/v1/workflows/" + esc(f.Workflow) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/workflows/{id...}", Request: get(func(f Fixture) string { return "/v1/workflows/" + esc(f.Workflow) + "/checkpoints" }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/workflows/{id...}", Request: get(func(f Fixture) string {
			return "/v1/workflows/" + esc(f.Workflow) + "/checkpoints/" + esc(f.WorkflowCheckpoint)
		}), Want: map[Caller]int{Other: 404}},
		{Pattern: "POST /v1/workflows/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/" + esc(f.Workflow) + "/updates", Body: map[string]any{"layer": 1, "channel": "messages", "update": "probe"}}
		}},
		{Pattern: "POST /v1/workflows/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/" + esc(f.Workflow) + "/decisions/" + esc(f.WorkflowDecision), Body: map[string]any{"answer": "approve"}}
		}, Want: map[Caller]int{Other: 404, WriteOnly: 404}}, // acts on state the caller must read
		{Pattern: "POST /v1/workflows/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/" + esc(f.Workflow) + "/fork", Body: map[string]any{"checkpoint_id": f.WorkflowCheckpoint, "workflow_id": "accesstest-fork"}}
		}, Want: map[Caller]int{Other: 404, WriteOnly: 404}}, // copies the source's past
		{Pattern: "POST /v1/workflows/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/" + esc(f.Workflow) + "/resume", Body: map[string]any{"checkpoint_id": f.WorkflowCheckpoint}}
		}, Want: map[Caller]int{Other: 404, WriteOnly: 404}}, // answers the state
		// a replan by requirement searches the tool graph of the workflow's
		// own scope and the catalogue (the other caller's request names
		// the same id in its own scope: its own workflow, its own graph);
		// any replan_dag is planned from the running DAG, so a write-only
		// caller gets the read's 404 first
		{Pattern: "POST /v1/workflows/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/" + esc(f.Workflow) + "/commands", Body: map[string]any{"command": "replan_dag", "args": map[string]any{"requirement": "check the baggage allowance", "k": 1}}}
		}, Want: map[Caller]int{WriteOnly: 404}},
		{Pattern: "POST /v1/workflows/suggest", Request: func(Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/suggest", Body: map[string]any{"intent": "change my flight", "context_tools": []string{"get_user_details"}}}
		}, Want: aggregate},
		{Pattern: "POST /v1/workflows/suggest/feedback", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/workflows/suggest/feedback?scope=" + url.QueryEscape(f.OwnScope), Body: map[string]any{"accepted": true, "mode": "suggestion", "confidence": 0.8}}
		}, Want: aggregate},
		// the DAG builder reads no scoped data: any token
		{Pattern: "POST /v1/dags", Request: func(Fixture) Request {
			return Request{Method: "POST", Path: "/v1/dags", Body: map[string]any{"tools": []string{"get_reservation_details", "think"}}}
		}},
		{Pattern: "GET /v1/searches/{id...}", Request: get(func(f Fixture) string { return "/v1/searches/" + esc(f.Search) }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/searches/{id...}", Request: get(func(f Fixture) string { return "/v1/searches/" + esc(f.Search) + "/nodes" }), Want: map[Caller]int{Other: 404}},
		{Pattern: "POST /v1/searches/{id...}", Write: true, Request: func(f Fixture) Request {
			return Request{Method: "POST", Path: "/v1/searches/" + esc(f.Search) + "/resume", Body: map[string]any{"decision": "approve"}}
		}, Want: map[Caller]int{Own: 202, Other: 404, WriteOnly: 404}}, // resolved among the scopes it reads and writes
		// the tool graph is per scope: a caller gets the union of the
		// graphs of the scopes it reads (another scope's token: its own
		// graph, where the own scope's tools are unknown; a write-only
		// token: the empty graph, where every tool is unknown: before, it
		// got every scope's graph), and ?scope= of a scope it does not
		// read is a 404
		{Pattern: "GET /v1/graph/next", Request: get(func(Fixture) string { return "/v1/graph/next?after=get_user_details" })},
		{Pattern: "GET /v1/graph/next", Request: get(func(f Fixture) string { return "/v1/graph/next?after=get_user_details&scope=" + f.OwnScope }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/graph/tools", Request: get(func(Fixture) string { return "/v1/graph/tools" })},
		{Pattern: "GET /v1/graph/tools", Request: get(func(f Fixture) string { return "/v1/graph/tools?scope=" + f.OwnScope }), Want: map[Caller]int{Other: 404}},
		{Pattern: "GET /v1/graph/path", Request: get(func(Fixture) string { return "/v1/graph/path?from=get_user_details&to=get_user_details" }), Want: map[Caller]int{WriteOnly: 404}},
		{Pattern: "GET /v1/graph/path", Request: get(func(f Fixture) string {
			return "/v1/graph/path?from=get_user_details&to=get_user_details&scope=" + f.OwnScope
		}), Want: map[Caller]int{Other: 404}},
		// the learned stream, caught up and closed (follow=false): the other
		// scope's token sees none of the own scope's learned events (the own
		// memory's memory.created carries its secret title), and may not
		// name the own scope as its filter
		{Pattern: "GET /v1/learned/stream", Request: get(func(Fixture) string { return "/v1/learned/stream?follow=false" })},
		{Pattern: "GET /v1/learned/stream", Request: get(func(f Fixture) string {
			return "/v1/learned/stream?follow=false&scope=" + url.QueryEscape(f.OwnScope)
		}), Want: map[Caller]int{Other: 403}},
		{Pattern: "GET /v1/digest", Request: get(func(Fixture) string { return "/v1/digest" }), Want: aggregate},
		{Pattern: "GET /v1/cluster", Request: get(func(Fixture) string { return "/v1/cluster" }), Want: aggregate},
		// the caller's own token: its name and scopes, no scoped data
		{Pattern: "GET /v1/whoami", Request: get(func(Fixture) string { return "/v1/whoami" })},
		{Pattern: "GET /openapi.json", Public: true, Request: get(func(Fixture) string { return "/openapi.json" })},
		{Pattern: "GET /healthz", Public: true, Request: get(func(Fixture) string { return "/healthz" })},
		{Pattern: "GET /metrics", Public: true, Request: get(func(Fixture) string { return "/metrics" })},
		// the MCP tools: MCPCases covers them tool by tool; here the
		// endpoint itself (an initialize request)
		{Pattern: "/mcp", Request: func(Fixture) Request {
			return Request{Method: "POST", Path: "/mcp", Body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
				"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "accesstest", "version": "1"}}}}
		}},
	}
}

// minute is a coordination.minute.recorded.v1 event in scope for session.
func minute(scope, session, text string) map[string]any {
	return map[string]any{
		"specversion": "1.0", "id": fmt.Sprintf("accesstest-%d", time.Now().UnixNano()), "source": "accesstest",
		"type": "coordination.minute.recorded.v1", "time": time.Now().UTC().Format(time.RFC3339Nano),
		"sessionid": session, "scope": scope,
		"data": map[string]any{"event_type": "note", "actor": "accesstest", "data": map[string]any{"text": text}},
	}
}

// Run checks every registered route pattern has a Case, then sends every
// Case as each Caller and checks the status; every 2xx answer to Other and
// every answer to WriteOnly must contain none of f.Secrets, and f.State
// must not change through Other's requests (WriteOnly's writes may change
// it: it writes the own scope).
func Run(t *testing.T, f Fixture, registered []string, cases []Case) {
	t.Helper()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.Pattern] = true
	}
	for _, p := range registered {
		if !covered[p] {
			t.Errorf("route %q has no access-control case: add it to accesstest.Cases", p)
		}
	}
	for _, c := range cases {
		if !slices.Contains(registered, c.Pattern) {
			t.Errorf("case for %q, which is not a registered route", c.Pattern)
		}
	}
	before := f.State(t)
	tokens := map[Caller]string{NoToken: "", WrongToken: "chr_not-a-token", Other: f.OtherToken}
	for _, c := range cases {
		req := c.Request(f)
		for _, who := range []Caller{NoToken, WrongToken, Other} {
			code, body := f.send(t, who, tokens[who], req)
			if want := c.want(who); code != want {
				t.Errorf("%s %s as %s: status %d, want %d (%s)", req.Method, req.Path, who, code, want, clip(body))
			}
			if code/100 == 2 {
				for _, s := range f.Secrets {
					if strings.Contains(body, s) {
						t.Errorf("%s %s as %s: the answer carries the own scope's %q", req.Method, req.Path, who, s)
					}
				}
			}
		}
	}
	if after := f.State(t); after != before {
		t.Errorf("the other scope's requests changed the own scope's state:\nbefore %s\nafter  %s", clip(before), clip(after))
	}
	// a producer of the own scope that reads nothing: its writes apply,
	// but no answer, whatever its status, shows the own scope's data (the
	// answers of writes used to: a workflow's state on resume and
	// updates, the PAIR view on improve, a memory's confidence on
	// feedback)
	if f.WriteOnlyToken != "" {
		for _, c := range cases {
			req := c.Request(f)
			code, body := f.send(t, WriteOnly, f.WriteOnlyToken, req)
			if want := c.want(WriteOnly); code != want {
				t.Errorf("%s %s as %s: status %d, want %d (%s)", req.Method, req.Path, WriteOnly, code, want, clip(body))
			}
			for _, s := range f.Secrets {
				if strings.Contains(body, s) {
					t.Errorf("%s %s as %s: the answer (%d) carries the own scope's %q", req.Method, req.Path, WriteOnly, code, s)
				}
			}
			var members map[string]json.RawMessage
			if json.Unmarshal([]byte(body), &members) == nil {
				for _, k := range writeOnlyWithheld {
					if _, ok := members[k]; ok {
						t.Errorf("%s %s as %s: the answer (%d) has %s, which only a reader of the scope may see: %s", req.Method, req.Path, WriteOnly, code, k, clip(body))
					}
				}
			}
		}
	}
	// own last: its writes are allowed to change the state
	for _, c := range cases {
		req := c.Request(f)
		if code, body := f.send(t, Own, f.OwnToken, req); code != c.want(Own) {
			t.Errorf("%s %s as %s: status %d, want %d (%s)", req.Method, req.Path, Own, code, c.want(Own), clip(body))
		}
	}
}

// writeOnlyWithheld are the members of write answers that hold what the
// scope held rather than what the caller wrote (a workflow's state, a
// memory's confidence, evidence and merge): never in an answer to
// WriteOnly.
var writeOnlyWithheld = []string{"state", "merged_into", "confidence", "initial_confidence", "evidence", "pruned", "new_confidence"}

// send sends r as who with token (none when "") and returns the status
// and body, after f.Response saw them.
func (f Fixture) send(t *testing.T, who Caller, token string, r Request) (int, string) {
	t.Helper()
	resp, b := send(t, f.BaseURL, token, r)
	if f.Response != nil {
		f.Response(t, r, who, resp, b)
	}
	return resp.StatusCode, string(b)
}

// send sends r with token (none when "") and returns the answer and its
// body (read and closed).
func send(t *testing.T, base, token string, r Request) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// runMCPWriteOnly checks the tools as WriteOnly: memory_search finds
// none of the own scope's memories, memory_record and memory_feedback work
// but their answers leave out confidence, evidence, the merge and
// new_confidence (before, the typed answers read 0 for them), and
// pair_improvement, search_get, search_resume and next_tool are errors; no answer
// carries a secret.
func runMCPWriteOnly(t *testing.T, f Fixture, connect func(string) (*mcp.ClientSession, error), call func(*mcp.ClientSession, string, map[string]any) (*mcp.CallToolResult, string)) {
	t.Helper()
	wo, err := connect(f.WriteOnlyToken)
	if err != nil {
		t.Fatal(err)
	}
	defer wo.Close()
	noSecret := func(tool, body string) {
		t.Helper()
		for _, s := range f.Secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s as %s: the answer carries the own scope's %q", tool, WriteOnly, s)
			}
		}
	}
	structured := func(tool string, res *mcp.CallToolResult, body string) map[string]any {
		t.Helper()
		var m map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || json.Unmarshal(b, &m) != nil {
			t.Errorf("%s as %s: %s, want an answer", tool, WriteOnly, clip(body))
		}
		for _, k := range writeOnlyWithheld {
			if _, ok := m[k]; ok {
				t.Errorf("%s as %s: the answer has %s, which only a reader of the scope may see: %s", tool, WriteOnly, k, clip(body))
			}
		}
		return m
	}
	for _, s := range f.Secrets {
		_, body := call(wo, "memory_search", map[string]any{"query": s, "min_confidence": 0, "scope": "all"})
		noSecret("memory_search", body)
	}
	res, body := call(wo, "memory_record", map[string]any{"title": "Probe", "description": "A probe.", "content": "probe from a write-only producer", "outcome": "success"})
	if m := structured("memory_record", res, body); m["id"] == nil {
		t.Errorf("memory_record as %s: %s, want the id", WriteOnly, clip(body))
	}
	noSecret("memory_record", body)
	res, body = call(wo, "memory_feedback", map[string]any{"memory_id": f.Memory, "helpful": true})
	if m := structured("memory_feedback", res, body); m["success"] != true {
		t.Errorf("memory_feedback as %s: %s, want success", WriteOnly, clip(body))
	}
	noSecret("memory_feedback", body)
	for _, args := range []map[string]any{{"session_id": f.Session}, {"session_id": f.Session, "scope": f.OwnScope}} {
		res, body := call(wo, "pair_improvement", args)
		if !res.IsError || strings.Contains(body, `"composite"`) {
			t.Errorf("pair_improvement as %s on the own scope's session %v answered: %s", WriteOnly, args, clip(body))
		}
		noSecret("pair_improvement", body)
	}
	// next_tool: a caller that reads no scope reads no tool graph
	if res, body := call(wo, "next_tool", map[string]any{"after": []string{"get_user_details"}}); !res.IsError || !strings.Contains(body, "may read no scope") {
		t.Errorf("next_tool as %s answered: %s", WriteOnly, clip(body))
	}
	if f.Search != "" {
		res, body := call(wo, "search_get", map[string]any{"search_id": f.Search})
		if !res.IsError || strings.Contains(body, `"open"`) {
			t.Errorf("search_get as %s on the own scope's search answered: %s", WriteOnly, clip(body))
		}
		noSecret("search_get", body)
		res, body = call(wo, "search_resume", map[string]any{"search_id": f.Search, "decision": "reject", "note": "probe from a write-only producer"})
		if !res.IsError || !strings.Contains(body, "not found") {
			t.Errorf("search_resume as %s on the own scope's search answered: %s", WriteOnly, clip(body))
		}
		noSecret("search_resume", body)
	}
}

// RunMCP checks the MCP tools over the /mcp endpoint as each caller: no or
// a wrong token cannot connect (401); the other scope's token finds none of
// the own scope's memories (memory_search), cannot give feedback on the own
// scope's memory (memory_feedback is an error, the same as for a missing
// memory), records only into its own scope (memory_record) and cannot read
// the own scope's session's PAIR loop (pair_improvement is an error, with
// or without its scope) nor read or resume the own scope's search
// (search_get and search_resume are errors, "not found" for the resume)
// nor ask the own scope's tool graph (next_tool with its scope is "not
// found"); the own scope's token gives feedback, reads the PAIR loop, the
// search and its tool graph's suggestions.
// With a WriteOnlyToken, that caller records and gives feedback without
// seeing confidence or evidence, and reads nothing (runMCPWriteOnly).
func RunMCP(t *testing.T, f Fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(token string) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "accesstest", Version: "1"}, nil)
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.BaseURL + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}, Timeout: 30 * time.Second}}, nil)
	}
	for _, tok := range []string{"", "chr_not-a-token"} {
		if cs, err := connect(tok); err == nil {
			cs.Close()
			t.Errorf("MCP with token %q: connected, want 401", tok)
		}
	}
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		b, _ := json.Marshal(res)
		return res, string(b)
	}
	before := f.State(t)
	other, err := connect(f.OtherToken)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, s := range f.Secrets {
		if _, body := call(other, "memory_search", map[string]any{"query": s, "min_confidence": 0, "scope": "all"}); strings.Contains(body, s) {
			t.Errorf("memory_search as %s returned the own scope's %q", Other, s)
		}
	}
	if res, body := call(other, "memory_feedback", map[string]any{"memory_id": f.Memory, "helpful": false}); !res.IsError {
		t.Errorf("memory_feedback as %s on the own scope's memory succeeded: %s", Other, clip(body))
	}
	if res, body := call(other, "memory_record", map[string]any{"title": "Probe", "description": "A probe.", "content": "probe from the other scope", "outcome": "success"}); res.IsError || !strings.Contains(body, f.OtherScope) {
		t.Errorf("memory_record as %s: %s, want a memory in %s", Other, clip(body), f.OtherScope)
	}
	for _, args := range []map[string]any{{"session_id": f.Session}, {"session_id": f.Session, "scope": f.OwnScope}} {
		if res, body := call(other, "pair_improvement", args); !res.IsError || strings.Contains(body, `"composite"`) {
			t.Errorf("pair_improvement as %s on the own scope's session %v answered: %s", Other, args, clip(body))
		}
	}
	if f.Search != "" {
		for _, args := range []map[string]any{{"search_id": f.Search}, {"search_id": f.Search, "scope": f.OwnScope}} {
			if res, body := call(other, "search_get", args); !res.IsError || strings.Contains(body, `"open"`) {
				t.Errorf("search_get as %s on the own scope's search %v answered: %s", Other, args, clip(body))
			}
			resume := map[string]any{"decision": "reject", "note": "probe from the other scope"}
			for k, v := range args {
				resume[k] = v
			}
			if res, body := call(other, "search_resume", resume); !res.IsError || !strings.Contains(body, "not found") {
				t.Errorf("search_resume as %s on the own scope's search %v answered: %s", Other, args, clip(body))
			}
		}
	}
	// next_tool from the own scope's graph: not found, as the route's 404
	if res, body := call(other, "next_tool", map[string]any{"after": []string{"get_user_details"}, "scope": f.OwnScope}); !res.IsError || !strings.Contains(body, "not found") {
		t.Errorf("next_tool as %s in the own scope answered: %s", Other, clip(body))
	}
	if after := f.State(t); after != before {
		t.Errorf("the other scope's MCP calls changed the own scope's state:\nbefore %s\nafter  %s", clip(before), clip(after))
	}
	if f.WriteOnlyToken != "" {
		runMCPWriteOnly(t, f, connect, call)
	}
	own, err := connect(f.OwnToken)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if res, body := call(own, "memory_feedback", map[string]any{"memory_id": f.Memory, "helpful": true}); res.IsError {
		t.Errorf("memory_feedback as %s: %s", Own, clip(body))
	}
	if res, body := call(own, "pair_improvement", map[string]any{"session_id": f.Session}); res.IsError || !strings.Contains(body, `"status"`) {
		t.Errorf("pair_improvement as %s: %s", Own, clip(body))
	}
	if res, body := call(own, "next_tool", map[string]any{"after": []string{"get_user_details"}, "scope": f.OwnScope}); res.IsError || !strings.Contains(body, `"suggestions":[{`) {
		t.Errorf("next_tool as %s: %s, want suggestions from the own scope's graph", Own, clip(body))
	}
	if f.Search != "" {
		if res, body := call(own, "search_get", map[string]any{"search_id": f.Search}); res.IsError || !strings.Contains(body, `"open"`) || !strings.Contains(body, f.Secrets[0]) {
			t.Errorf("search_get as %s: %s", Own, clip(body))
		}
	}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}
