package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// The MCP tools whose answer is an HTTP route's body declare the route's
// response schema from openapi.json as their output schema, and /mcp
// serves it in tools/list. They declared an open object before
// (2026-12-07): a client generating types from tools/list got
// Record<string, unknown> for pair_improvement, search_get, search_resume
// and next_tool.
func TestMCPOutputSchemasFromOpenAPI(t *testing.T) {
	schemas := httpapi.MCPOutputSchemas()
	var names []string
	for n := range schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"memory_list", "next_tool", "pair_improvement", "pattern_get", "pattern_history", "search_get", "search_resume"}; !slices.Equal(names, want) {
		t.Fatalf("MCPOutputSchemas names %v, want %v", names, want)
	}
	// each resolves on its own ($defs) and refuses a body its route's
	// schema refuses
	bad := map[string]string{
		"next_tool":        `{"suggestions":"none"}`,
		"memory_list":      `{"memories":{},"next_cursor":""}`,
		"pattern_get":      `{"id":"p1","session_count":"one"}`,
		"pattern_history":  `{"pattern_id":"p1","records":"none"}`,
		"pair_improvement": `{"status":7}`,
		"search_get":       `{"id":"s1"}`,
		"search_resume":    `{"id":"e1","search_id":"s1","scope":"project:a","node_id":"n1","decision":"maybe"}`,
	}
	for _, n := range names {
		s := schemas[n]
		if s.Type != "object" || len(s.Properties) == 0 {
			t.Errorf("%s: type %q with %d properties, want an object schema with its properties", n, s.Type, len(s.Properties))
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Errorf("%s: the schema does not resolve: %v", n, err)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(bad[n]), &v); err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(v); err == nil {
			t.Errorf("%s: %s passes its output schema", n, bad[n])
		}
	}

	srv := httptest.NewServer(routesOnly().Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "output-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// canonical JSON: both sides re-marshalled from their decoded values
	canon := func(v any) string {
		b, _ := json.Marshal(v)
		var d any
		_ = json.Unmarshal(b, &d)
		b, _ = json.Marshal(d)
		return string(b)
	}
	served := map[string]string{}
	for _, tool := range list.Tools {
		served[tool.Name] = canon(tool.OutputSchema)
	}
	for _, n := range names {
		if want := canon(schemas[n]); served[n] != want {
			t.Errorf("tools/list serves %s's output schema as %.300s, want openapi.json's %.300s", n, served[n], want)
		}
	}
}
