package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// A request whose params are not an object, and an initialize without
// params, are refused with -32602 Invalid params carrying the id, over
// stdio and /mcp, and the server goes on answering. Before, the SDK
// answered such an initialize with error code 0, which JSON-RPC 2.0 does
// not define (a mutation test of the HTTP API, 2026-12-03).
func TestParamsThatAreNoObjectAreInvalidParams(t *testing.T) {
	bad := []string{
		`{"jsonrpc":"2.0","id":11,"method":"initialize","params":[1,"a"]}`,
		`{"jsonrpc":"2.0","id":12,"method":"initialize","params":null}`,
		`{"jsonrpc":"2.0","id":13,"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":"memory_search"}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/list","params":7}`,
	}
	type answer struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	t.Run("stdio", func(t *testing.T) {
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}
		lines = append(lines, bad[2:]...) // after the session's initialize: a second one is refused anyway
		lines = append(lines, `{"jsonrpc":"2.0","id":20,"method":"ping"}`)
		out := pipeLines(t, newFake(), lines)
		got := map[string]answer{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var a answer
			if json.Unmarshal([]byte(line), &a) == nil {
				got[string(a.ID)] = a
			}
		}
		for _, id := range []string{"14", "15"} {
			if a, ok := got[id]; !ok || a.Error == nil || a.Error.Code != -32602 || !strings.Contains(a.Error.Message, "params: ") {
				t.Errorf("id %s: %+v, want -32602 naming params\n%s", id, a, out)
			}
		}
		if a := got["20"]; a.Result == nil {
			t.Errorf("the ping after the refusals was not answered\n%s", out)
		}
	})
	t.Run("http", func(t *testing.T) {
		_, url := newHTTP(t)
		for _, b := range bad {
			resp, body := postRPC(t, url, b, "2025-06-18")
			var a answer
			_ = json.Unmarshal(body, &a)
			var sent struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(b), &sent)
			if resp.StatusCode != 200 || a.Error == nil || a.Error.Code != -32602 || string(a.ID) != string(sent.ID) {
				t.Errorf("%s: %d %s, want -32602 with the id", b, resp.StatusCode, body)
			}
		}
	})
}
