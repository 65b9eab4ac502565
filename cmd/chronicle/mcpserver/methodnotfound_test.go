package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A JSON-RPC request for a method the server does not have is answered
// with the JSON-RPC error -32601 and the request's id, as application/json
// (the Streamable HTTP transport: a JSON-RPC request gets text/event-stream
// or application/json), as the stdio transport answers it; the SDK
// answered a text/plain 400 "JSON RPC not handled" (a walkthrough with the
// official TypeScript SDK, 2026-11-30). The SDK's other answers are as
// before: a known method gets its result. (A body that is no JSON, the
// SDK's text/plain 400 then, is a JSON-RPC Parse error since 2026-12-03:
// TestMalformedBodyIsAParseError.)
func TestUnknownMethodIsAJSONRPCError(t *testing.T) {
	_, url := newHTTP(t)
	post := func(body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer writer")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ctype, body := post(`{"jsonrpc":"2.0","id":6,"method":"nope/method"}`)
	var rpc struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if code != http.StatusOK || !strings.HasPrefix(ctype, "application/json") || json.Unmarshal([]byte(body), &rpc) != nil || rpc.Error == nil ||
		rpc.Error.Code != -32601 || string(rpc.ID) != "6" || !strings.Contains(rpc.Error.Message, "nope/method") {
		t.Errorf("an unknown method: %d %s %s; want 200 application/json with error -32601 and id 6", code, ctype, body)
	}
	if code, ctype, body := post(`{"jsonrpc":"2.0","id":7,`); code != http.StatusBadRequest || !strings.HasPrefix(ctype, "application/json") || !strings.Contains(body, "-32700") {
		t.Errorf("a body that is no JSON: %d %s %s; want a 400 JSON-RPC Parse error", code, ctype, body)
	}
	if code, _, body := post(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, "memory_search") {
		t.Errorf("tools/list: %d %s", code, body)
	}
}
