package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// A tools/call whose arguments repeat a member within one object is a
// tool error naming the member's pointer within the arguments and that
// it appears twice, over HTTP (/mcp) and stdio (`chronicle mcp`), and the
// tool does not run, as the HTTP routes refuse such a body. Before, the
// SDK kept the last member silently: {"query":"a","query":"b"} searched
// for "b" (the last closing note's gap).
func TestRepeatedArgumentIsRefused(t *testing.T) {
	cases := []struct{ tool, args, pointer string }{
		{"memory_search", `{"query":"a","query":"b"}`, "/query"},
		{"memory_record", `{"title":"t","description":"d","content":"c","outcome":"success","outcome":"failure"}`, "/outcome"},
		{"memory_feedback", `{"memory_id":"m1","helpful":true,"helpful":false}`, "/helpful"},
	}
	t.Run("http", func(t *testing.T) {
		fake, url := newHTTP(t)
		cs := connectToken(t, url, "writer")
		for _, c := range cases {
			res, err := cs.CallTool(mcptest.Context(t), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
			if err != nil {
				t.Fatalf("%s %s: protocol error %v, want a tool error", c.tool, c.args, err)
			}
			mcptest.WantToolError(t, res, "invalid argument: "+c.pointer+": ", "appears twice")
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("calls with a repeated argument reached the backend %d times", n)
		}
		// the same arguments without the repeat run
		res, err := cs.CallTool(mcptest.Context(t), &mcp.CallToolParams{Name: "memory_search", Arguments: json.RawMessage(`{"query":"a"}`)})
		if err != nil || res.IsError {
			t.Fatalf("memory_search without a repeat: %v %s", err, mcptest.Text(res))
		}
	})
	t.Run("stdio", func(t *testing.T) {
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}
		for i, c := range cases {
			p, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": map[string]any{"name": c.tool, "arguments": json.RawMessage(c.args)}})
			lines = append(lines, string(p))
		}
		if !strings.Contains(lines[2], `"query":"a","query":"b"`) {
			t.Fatalf("the request lost its repeat: %s", lines[2])
		}
		fake := newFake()
		out := pipeLines(t, fake, lines)
		results := map[int]mcp.CallToolResult{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct {
				ID     int                 `json:"id"`
				Result *mcp.CallToolResult `json:"result"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.ID >= 2 && m.Result != nil {
				results[m.ID] = *m.Result
			}
		}
		for i, c := range cases {
			res, ok := results[i+2]
			if !ok {
				t.Errorf("%s %s: no result\n%s", c.tool, c.args, out)
				continue
			}
			mcptest.WantToolError(t, &res, "invalid argument: "+c.pointer+": ", "appears twice")
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("calls with a repeated argument reached the backend %d times", n)
		}
	})
}
