package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// memory_list, pattern_get and pattern_history over /mcp answer what GET
// /v1/memories, GET /v1/patterns/{id} and GET /v1/patterns/{id}/history
// answer the same token, page for page (the tools call the routes in
// process, as the caller), and refuse as the routes do: another scope's
// pattern is not found, a scope the token does not read is refused naming
// scope, a token that reads nothing is refused before any request. Before,
// an MCP client could not list the memory bank nor see why a pattern had
// its confidence: the routes were new on 2026-12-07 and had no tools. The
// memory_list and pattern_history schemas' limits are the routes'.
func TestMCPReadToolsAnswerAsTheirRoutes(t *testing.T) {
	p, _, base := scopedServer(t)
	for _, title := range []string{"Quince one", "Quince two"} {
		body := map[string]any{"title": title, "description": "d", "content": "content of " + title, "outcome": "success"}
		if code, m := call(t, base, "tok-a", "POST", "/v1/memories", body); code != 202 {
			t.Fatalf("record %s: %d %v", title, code, m)
		}
	}
	envs, _ := sessionIn(t, 3, "project:a", "MCP-READ-TEST")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	pat := patternOf(t, p, "project:a")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "read-tools-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: base + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b, wo := connect("tok-a"), connect("tok-b"), connect("tok-wo")
	// same answers the route gives: canonical JSON of both
	same := func(tool string, args map[string]any, path string) map[string]any {
		t.Helper()
		res := mcptest.Call(t, a, tool, args)
		if res.IsError {
			t.Fatalf("%s %v: %s", tool, args, mcptest.Text(res))
		}
		code, route := call(t, base, "tok-a", "GET", path, nil)
		viaMCP, _ := json.Marshal(res.StructuredContent)
		viaRoute, _ := json.Marshal(route)
		if code != 200 || string(viaMCP) != string(viaRoute) {
			t.Fatalf("%s %v:\n%s\nGET %s: %d\n%s", tool, args, viaMCP, path, code, viaRoute)
		}
		return route
	}

	// page by page, one memory a page (the two recorded and what the
	// session distilled), each page the route's
	cursor, pages := "", 0
	for ; pages == 0 || cursor != ""; pages++ {
		args, path := map[string]any{"limit": 1}, "/v1/memories?limit=1"
		if cursor != "" {
			args["cursor"], path = cursor, path+"&cursor="+url.QueryEscape(cursor)
		}
		page := same("memory_list", args, path)
		if len(page["memories"].([]any)) != 1 || pages > 10 {
			t.Fatalf("memory_list page %d: %v, want one memory", pages, page)
		}
		cursor, _ = page["next_cursor"].(string)
	}
	if pages < 2 {
		t.Fatalf("memory_list: %d pages of one memory, want one for each of at least the two recorded", pages)
	}
	same("memory_list", map[string]any{"scope": "project"}, "/v1/memories?scope=project")
	mcptest.WantToolError(t, mcptest.Call(t, a, "memory_list", map[string]any{"scope": "project:b"}), "memory_list", "scope")
	mcptest.WantToolError(t, mcptest.Call(t, a, "memory_list", map[string]any{"cursor": "nonsense"}), "invalid argument: cursor")
	if list := mcptest.Structured[map[string]any](t, mcptest.Call(t, b, "memory_list", map[string]any{})); len(list["memories"].([]any)) != 0 {
		t.Fatalf("project:b's memory_list: %v, want none of project:a's", list)
	}

	if v := same("pattern_get", map[string]any{"pattern_id": pat}, "/v1/patterns/"+pat); v["id"] != pat {
		t.Fatalf("pattern_get: %v", v)
	}
	if h := same("pattern_history", map[string]any{"pattern_id": pat, "limit": 1}, "/v1/patterns/"+pat+"/history?limit=1"); h["record_count"] != float64(1) {
		t.Fatalf("pattern_history: %v, want the pattern's one record", h)
	}
	for _, tool := range []string{"pattern_get", "pattern_history"} {
		mcptest.WantToolError(t, mcptest.Call(t, b, tool, map[string]any{"pattern_id": pat}), "not found")
		mcptest.WantToolError(t, mcptest.Call(t, a, tool, map[string]any{"pattern_id": "pat-none"}), "not found")
	}
	for tool, args := range map[string]map[string]any{"memory_list": {}, "pattern_get": {"pattern_id": pat}, "pattern_history": {"pattern_id": pat}} {
		mcptest.WantToolError(t, mcptest.Call(t, wo, tool, args), tool+": the caller may read no scope")
	}

	list, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	limits := map[string][2]float64{"memory_list": {httpapi.MaxMemoryList, httpapi.DefaultMemoryList}, "pattern_history": {500, 0}}
	for _, tool := range list.Tools {
		want, ok := limits[tool.Name]
		if !ok {
			continue
		}
		delete(limits, tool.Name)
		b, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]struct {
				Maximum float64 `json:"maximum"`
				Default float64 `json:"default"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if l := s.Properties["limit"]; l.Maximum != want[0] || l.Default != want[1] {
			t.Errorf("%s: limit maximum %v default %v, want the route's %v and %v", tool.Name, l.Maximum, l.Default, want[0], want[1])
		}
	}
	if len(limits) != 0 {
		t.Errorf("tools/list lacks %v", limits)
	}
}
