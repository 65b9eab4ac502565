package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// A token for project:a never sees project:b, through any endpoint: the
// answer for someone else's object is the same 404 as for a missing one.
func TestScopesThroughEveryEndpoint(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	defer srv.Close()
	do := func(token, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	// project:a's session and memory, written with a's token
	recs, _ := sampleRecords()
	envs, _ := taubench.Events(recs[3])
	for i := range envs {
		envs[i].Scope = "project:a"
	}
	id := envs[0].SessionID
	if code, m := do("tok-b", "POST", "/v1/events", envs); code != 403 || m["index"] != float64(0) {
		t.Fatalf("b writing project:a: %d %v", code, m)
	}
	if code, m := do("tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("a writing project:a: %d %v", code, m)
	}
	code, rec := do("tok-a", "POST", "/v1/memories", map[string]any{"title": "Check fare rules", "description": "Before changing flights, check the fare class.", "content": "Look up the reservation, then the fare rules.", "outcome": "success"})
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	mem := rec["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if code, m := do("tok-a", "GET", "/v1/memories/"+mem, nil); code != 200 || m["scope"] != "project:a" {
		t.Fatalf("a reading its memory: %d %v", code, m)
	}

	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/v1/sessions/" + id, nil, 404},
		{"GET", "/v1/sessions/" + id + "/events", nil, 404},
		{"GET", "/v1/memories/" + mem, nil, 404},
		{"GET", "/v1/memories/" + mem + "/history", nil, 404},
		{"POST", "/v1/memories/" + mem + "/feedback", map[string]any{"helpful": true}, 404},
		{"POST", "/v1/memories", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success", "scope": "project:a"}, 403},
		{"GET", "/v1/tools/search?query=flight", nil, 403},
		{"GET", "/v1/graph/tools?scope=project:a", nil, 404},
		{"GET", "/v1/graph/next?after=get_user_details&scope=project:a", nil, 404},
		{"GET", "/v1/graph/path?from=get_user_details&to=get_user_details&scope=project:a", nil, 404},
		{"GET", "/v1/graph/path?from=get_user_details&to=get_user_details", nil, 404}, // unknown in b's own graph
		{"GET", "/v1/digest", nil, 403},
	} {
		if code, m := do("tok-b", c.method, c.path, c.body); code != c.want {
			t.Errorf("b %s %s: %d %v, want %d", c.method, c.path, code, m, c.want)
		}
		// the answer about b's own missing objects is the same
	}
	// the 404 says where to look next (the session's events in the log,
	// the dead letters), the same words whether the session is missing or
	// another scope's
	code, missing := do("tok-b", "GET", "/v1/sessions/no-such-session", nil)
	if msg, _ := missing["error"].(string); code != 404 || !strings.HasPrefix(msg, `session "no-such-session" not found`) ||
		!strings.Contains(msg, "GET /v1/deadletters") || !strings.Contains(msg, "/events") {
		t.Fatalf("missing session: %d %v; want a 404 pointing to the session's events and the dead letters", code, missing)
	}
	want := strings.Replace(missing["error"].(string), "no-such-session", id, 1)
	if code, m := do("tok-b", "GET", "/v1/sessions/"+id, nil); code != 404 || m["error"] != want {
		t.Fatalf("b's answer about a's session leaks existence: %d %v; want %q", code, m, want)
	}
	if code, m := do("tok-b", "GET", "/v1/sessions", nil); code != 200 || len(m["sessions"].([]any)) != 0 {
		t.Fatalf("b listing: %d %v", code, m)
	}
	if code, m := do("tok-a", "GET", "/v1/sessions", nil); code != 200 || len(m["sessions"].([]any)) != 1 {
		t.Fatalf("a listing: %d %v", code, m)
	}
	q := "/v1/memories/search?min_confidence=0&query=" + url.QueryEscape("check the fare rules before changing flights")
	if code, m := do("tok-b", "GET", q, nil); code != 200 || len(m["memories"].([]any)) != 0 {
		t.Fatalf("b searching: %d %v", code, m)
	}
	if code, m := do("tok-a", "GET", q, nil); code != 200 || len(m["memories"].([]any)) == 0 {
		t.Fatalf("a searching: %d %v", code, m)
	}
	if code, _ := do("tok-admin", "GET", "/v1/graph/tools", nil); code != 200 {
		t.Fatalf("admin graph: %d", code)
	}
	// the tool graph is per scope: b's own graph is empty, a's holds its
	// session's tools, and the admin's view (every scope) is their union
	if code, m := do("tok-b", "GET", "/v1/graph/tools", nil); code != 200 || len(m["tools"].([]any)) != 0 {
		t.Fatalf("b's tool graph: %d %v, want project:b's own (empty)", code, m)
	}
	if code, m := do("tok-b", "GET", "/v1/graph/next?after=get_user_details", nil); code != 200 || len(m["suggestions"].([]any)) != 0 {
		t.Fatalf("b's next tool: %d %v, want no suggestion from project:a's calls", code, m)
	}
	codeA, ma := do("tok-a", "GET", "/v1/graph/tools", nil)
	codeAdm, madm := do("tok-admin", "GET", "/v1/graph/tools?scope=project:a", nil)
	if codeA != 200 || len(ma["tools"].([]any)) == 0 || codeAdm != 200 || fmt.Sprint(ma) != fmt.Sprint(madm) {
		t.Fatalf("a's tool graph: %d %v; the admin's view of project:a: %d %v", codeA, ma, codeAdm, madm)
	}
	// coordination patterns are scoped like memories; tools need every scope
	pq := "/v1/patterns/search?min_confidence=0&outcome=all&query=" + url.QueryEscape("change the flight of a reservation")
	if code, m := do("tok-b", "GET", pq, nil); code != 200 || len(m["patterns"].([]any)) != 0 || m["total_found"] != float64(0) {
		t.Fatalf("b searching patterns: %d %v", code, m)
	}
	if code, m := do("tok-a", "GET", pq, nil); code != 200 || len(m["patterns"].([]any)) != 1 ||
		m["patterns"].([]any)[0].(map[string]any)["source_sessions"].([]any)[0] != id {
		t.Fatalf("a searching patterns: %d %v", code, m)
	}
	if code, m := do("tok-admin", "GET", "/v1/tools/search?query="+url.QueryEscape("look up the user's details"), nil); code != 200 || len(m["tools"].([]any)) == 0 {
		t.Fatalf("admin searching tools: %d %v", code, m)
	}
	if code, m := do("tok-admin", "GET", "/v1/patterns/search?query=x&limit=99", nil); code != 400 || !strings.Contains(m["error"].(string), "limit") {
		t.Fatalf("bad limit: %d %v", code, m)
	}
	for _, tok := range []string{"", "tok-wrong"} {
		if code, _ := do(tok, "GET", "/v1/sessions", nil); code != 401 {
			t.Fatalf("token %q: %d", tok, code)
		}
	}
	if code, _ := do("", "GET", "/healthz", nil); code != 200 {
		t.Fatalf("healthz without a token: %d", code)
	}

	// the MCP tools over /mcp with b's token see nothing of project:a
	client := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil)
	for _, c := range []struct {
		token string
		hits  int
	}{{"tok-b", 0}, {"tok-a", 1}} {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{c.token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "check the fare rules", "min_confidence": 0}})
		if err != nil || res.IsError {
			t.Fatalf("%s memory_search: %v %+v", c.token, err, res)
		}
		var out struct {
			Memories []map[string]any `json:"memories"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		if len(out.Memories) < c.hits || (c.hits == 0 && len(out.Memories) != 0) {
			t.Fatalf("%s via MCP: %d memories", c.token, len(out.Memories))
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": mem, "helpful": true}})
		if err != nil || (c.token == "tok-b") != res.IsError {
			t.Fatalf("%s memory_feedback on a's memory: %v %+v", c.token, err, res)
		}
		// next_tool answers what GET /v1/graph/next answers the same token:
		// a's graph for a, b's own (empty) for b, and a's scope named by b
		// is not found
		text := "I want to change my flight"
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "next_tool", Arguments: map[string]any{"after": []string{"get_user_details"}, "text": text, "k": 3}})
		if err != nil || res.IsError {
			t.Fatalf("%s next_tool: %v %+v", c.token, err, res)
		}
		code, viaRoute := do(c.token, "GET", "/v1/graph/next?k=3&after=get_user_details&text="+url.QueryEscape(text), nil)
		viaMCP, _ := json.Marshal(res.StructuredContent)
		route, _ := json.Marshal(viaRoute)
		if code != 200 || string(viaMCP) != string(route) {
			t.Fatalf("%s next_tool %s, GET /v1/graph/next %d %s", c.token, viaMCP, code, route)
		}
		if n := len(viaRoute["suggestions"].([]any)); (n == 0) != (c.token == "tok-b") {
			t.Fatalf("%s next_tool: %d suggestions %s", c.token, n, viaMCP)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "next_tool", Arguments: map[string]any{"after": []string{"get_user_details"}, "scope": "project:a"}})
		if err != nil || (c.token == "tok-b") != res.IsError || (res.IsError && !strings.Contains(mcptest.Text(res), "not found")) {
			t.Fatalf("%s next_tool in project:a: %v %+v", c.token, err, res)
		}
		cs.Close()
	}
}

// memory_feedback over /mcp names the memory's scope when its id is in
// several scopes the token writes, as ?scope= does over HTTP: it refused
// the argument ("unexpected additional properties") and so could not give
// feedback on such a memory at all (found by a tenant-isolation
// walkthrough).
func TestMCPFeedbackNamesTheScope(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "ab", SHA256: access.Hash("tok-ab"), Read: []string{"project:a", "project:b"}, Write: []string{"project:a", "project:b"}},
	}}
	srv := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens, Version: "v9.8.7 (test)"}).Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var envs []events.Envelope
	for _, sc := range []string{"project:a", "project:b"} {
		env, err := events.New(events.MemoryRecorded, "test/"+sc, "rec-shared", time.Unix(1700000000, 0), events.MemoryRecordedData{
			MemoryID: "mem-shared", Title: "t " + sc, Description: "d", Content: "c " + sc, Outcome: "success", Source: "explicit"})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = sc
		envs = append(envs, env)
	}
	if err := p.Producer.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"tok-ab", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// the handshake names the server's version (it said "dev" whatever the build)
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "chronicle" || info.Version != "v9.8.7 (test)" {
		t.Fatalf("serverInfo %+v, want chronicle v9.8.7 (test)", info)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": "mem-shared", "helpful": false}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "name the scope") {
		t.Fatalf("feedback without a scope: %v %s, want the error asking for one", err, mcptest.Text(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": "mem-shared", "helpful": false, "scope": "project:b"}})
	if err != nil || res.IsError {
		t.Fatalf("feedback naming project:b: %v %s", err, mcptest.Text(res))
	}
	for sc, want := range map[string]int{"project:a": 0, "project:b": 1} {
		_, signals, err := memories.History(p.Store, events.EntityKey(sc, "mem-shared"))
		if err != nil || len(signals) != want {
			t.Fatalf("%s's signals %+v %v, want %d", sc, signals, err, want)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": "mem-shared", "helpful": false, "scope": "project"}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "scope") {
		t.Fatalf("feedback naming a kind, not a scope: %v %s, want an error naming scope", err, mcptest.Text(res))
	}
	// a scope the token neither writes nor reads: "memory not found", as
	// the HTTP route's 404 (TestFeedbackOnAScopeItCannotReadIsNotFound;
	// it said "may not write project:c", where the route said 404)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": "mem-shared", "helpful": false, "scope": "project:c"}})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Text(res), "memory not found") {
		t.Fatalf("feedback naming a scope it may not read nor write: %v %s, want memory not found", err, mcptest.Text(res))
	}
}

// The graph routes read ?scope= as the list routes and the searches do: one
// scope, a kind (the scopes of that kind the token reads; for a token that
// reads *, those the tool graph holds) or all. A token that reads no scope
// sees an empty graph, not every scope's.
func TestGraphRoutesTakeAScopeKind(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a", "team:t"}, Write: []string{"project:a", "team:t"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
		{Name: "producer", SHA256: access.Hash("tok-producer"), Write: []string{"project:b"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	defer srv.Close()
	do := func(token, method, path string, body any) (int, map[string]any) {
		t.Helper()
		return call(t, srv.URL, token, method, path, body)
	}
	recs, _ := sampleRecords()
	for i, sc := range map[int]string{3: "project:a", 5: "project:b", 0: "team:t"} {
		envs, _ := taubench.Events(recs[i])
		for j := range envs {
			envs[j].Scope = sc
		}
		if code, m := do("tok-admin", "POST", "/v1/events", envs); code != 202 {
			t.Fatalf("writing %s: %d %v", sc, code, m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tools := func(token, scope string) string {
		t.Helper()
		path := "/v1/graph/tools"
		if scope != "" {
			path += "?scope=" + url.QueryEscape(scope)
		}
		code, m := do(token, "GET", path, nil)
		if code != 200 {
			t.Fatalf("%s graph/tools?scope=%s: %d %v", token, scope, code, m)
		}
		var names []string
		for _, x := range m["tools"].([]any) {
			tl := x.(map[string]any)
			names = append(names, fmt.Sprintf("%s:%v", tl["tool"], tl["calls"]))
		}
		return strings.Join(names, " ")
	}
	a, b, team := tools("tok-admin", "project:a"), tools("tok-admin", "project:b"), tools("tok-admin", "team:t")
	if a == "" || b == "" || team == "" || a == b {
		t.Fatalf("the three scopes' graphs: %q, %q, %q", a, b, team)
	}
	for _, c := range []struct{ token, scope, want string }{
		{"tok-a", "project", a}, // a's projects: project:a
		{"tok-a", "team", team}, // a's teams: team:t
		{"tok-a", "org", ""},    // a reads no org scope: the empty graph
		{"tok-a", "all", tools("tok-a", "")},
		{"tok-admin", "team", team}, // the teams the graph holds
		{"tok-admin", "all", tools("tok-admin", "")},
		{"tok-producer", "", ""}, // reads nothing: the empty graph
		{"tok-producer", "project", ""},
	} {
		if got := tools(c.token, c.scope); got != c.want {
			t.Errorf("%s graph/tools?scope=%s: %q, want %q", c.token, c.scope, got, c.want)
		}
	}
	// the admin's projects: project:a's and project:b's graphs summed
	if got := tools("tok-admin", "project"); got == a || got == b || got == "" || got == tools("tok-admin", "") {
		t.Errorf("admin graph/tools?scope=project: %q, want project:a's and project:b's union (a %q, b %q)", got, a, b)
	}
	if code, m := do("tok-a", "GET", "/v1/graph/next?after=get_user_details&scope=projects", nil); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "scope") {
		t.Errorf("graph/next?scope=projects: %d %v, want a 400 naming scope", code, m)
	}
	// next and path read the same scopes: a's projects answer as project:a
	codeKind, kind := do("tok-a", "GET", "/v1/graph/next?after=get_user_details&scope=project", nil)
	codeOne, one := do("tok-a", "GET", "/v1/graph/next?after=get_user_details&scope=project:a", nil)
	if codeKind != 200 || codeOne != 200 || fmt.Sprint(kind) != fmt.Sprint(one) {
		t.Errorf("graph/next?scope=project %d %v, ?scope=project:a %d %v", codeKind, kind, codeOne, one)
	}
}
