package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// A tools/call whose arguments are JSON null is a tool error, "invalid
// argument: /: type: got null, want object", for every tool, over /mcp and
// stdio, and the server goes on answering. Before, memory_search and
// next_tool (whose schemas have defaults) panicked inside the SDK, which
// ended `chronicle serve` and `chronicle mcp` on one request from any
// token, a reader's included (an MCP walkthrough, 2026-12-03).
func TestNullArgumentsAreAToolError(t *testing.T) {
	tools := []string{"memory_search", "memory_record", "memory_feedback", "next_tool", "search_get", "search_resume", "pair_improvement", "memory_list", "pattern_get", "pattern_history"}
	t.Run("http", func(t *testing.T) {
		fake, url := newHTTP(t)
		cs := connectToken(t, url, "writer")
		for _, tool := range tools {
			res, err := cs.CallTool(mcptest.Context(t), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(`null`)})
			if err != nil {
				t.Fatalf("%s null: protocol error %v, want a tool error", tool, err)
			}
			mcptest.WantToolError(t, res, "invalid argument: /: type: got null, want object")
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("calls with null arguments reached the backend %d times", n)
		}
		// the server still answers
		res, err := cs.CallTool(mcptest.Context(t), &mcp.CallToolParams{Name: "memory_search", Arguments: json.RawMessage(`{"query":"a"}`)})
		if err != nil || res.IsError {
			t.Fatalf("memory_search after the null calls: %v %s", err, mcptest.Text(res))
		}
	})
	t.Run("stdio", func(t *testing.T) {
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}
		// the tools this backend offers over stdio (the fake has no tool
		// graph, searches nor sessions: the HTTP case covers those)
		tools := []string{"memory_search", "memory_record", "memory_feedback"}
		for i, tool := range tools {
			lines = append(lines, `{"jsonrpc":"2.0","id":`+itoa(i+2)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":null}}`)
		}
		pingID := len(tools) + 2
		lines = append(lines, `{"jsonrpc":"2.0","id":`+itoa(pingID)+`,"method":"ping"}`)
		fake := newFake()
		out := pipeLines(t, fake, lines)
		results := map[int]mcp.CallToolResult{}
		pinged := false
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || m.Result == nil {
				continue
			}
			if m.ID == pingID {
				pinged = true
				continue
			}
			var r mcp.CallToolResult
			if m.ID >= 2 && json.Unmarshal(m.Result, &r) == nil {
				results[m.ID] = r
			}
		}
		for i, tool := range tools {
			res, ok := results[i+2]
			if !ok {
				t.Errorf("%s null: no result\n%s", tool, out)
				continue
			}
			mcptest.WantToolError(t, &res, "invalid argument: /: type: got null, want object")
		}
		if !pinged {
			t.Errorf("the ping after the null calls was not answered\n%s", out)
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("calls with null arguments reached the backend %d times", n)
		}
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
