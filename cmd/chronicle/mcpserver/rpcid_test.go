package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A request whose id this server cannot answer as sent — a fraction, an
// integer beyond 2^53, null — is refused with -32600 Invalid Request
// carrying the id as sent (null for null), over stdio and /mcp, and the
// requests after it are served. Before, the SDK answered 1.5 as 1,
// 9007199254740993 as 9007199254740992 (both the answer to another
// request a client could have in flight), and over stdio dropped a
// null-id request unanswered (an MCP walkthrough, 2026-12-03). A string
// id and an integer within range are answered as sent.
func TestUnanswerableIDsAreRefused(t *testing.T) {
	bad := []string{`1.5`, `9007199254740993`, `-9007199254740993`, `1e3`, `null`, `-0`}
	t.Run("stdio", func(t *testing.T) {
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}
		for _, id := range bad {
			lines = append(lines, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		}
		lines = append(lines, `{"jsonrpc":"2.0","id":"after","method":"ping"}`, `{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`)
		out := pipeLines(t, newFake(), lines)
		refused := map[string]string{}
		answered := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil {
				t.Fatalf("not JSON: %s", line)
			}
			if m.Error != nil && m.Error.Code == -32600 {
				refused[string(m.ID)] = m.Error.Message
			} else if m.Result != nil {
				answered[string(m.ID)] = true
			}
		}
		for _, id := range bad {
			if _, ok := refused[id]; !ok {
				t.Errorf("id %s: not refused with -32600 carrying the id as sent\n%s", id, out)
			}
		}
		if !answered[`"after"`] || !answered[`9007199254740991`] {
			t.Errorf("the pings after the refusals (ids \"after\", 2^53-1) were not both answered\n%s", out)
		}
	})
	t.Run("http", func(t *testing.T) {
		_, url := newHTTP(t)
		for _, id := range bad {
			resp, b := postRPC(t, url, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, "2025-06-18")
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &m)
			if resp.StatusCode != 400 || m.Error == nil || m.Error.Code != -32600 || (id != "null" && string(m.ID) != id) {
				t.Errorf("id %s: %d %s, want 400 with -32600 and the id as sent", id, resp.StatusCode, b)
			}
		}
	})
}

// An MCP-Protocol-Version header that is no date is the transport's
// text/plain 400 naming the supported versions, as an unsupported version
// before 2026-07-28 is; "bogus" (after 2026-07-28 in string order) was
// answered a JSON-RPC error about a _meta field (an MCP walkthrough).
func TestMalformedProtocolVersionHeader(t *testing.T) {
	_, url := newHTTP(t)
	for _, v := range []string{"bogus", "2025-6-18", "latest"} {
		resp, b := postRPC(t, url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v)
		if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(string(b), "Unsupported protocol version") || !strings.Contains(string(b), "2025-06-18") {
			t.Errorf("MCP-Protocol-Version %q: %d %s %s, want the text/plain 400 naming the supported versions", v, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}

// logging/setLevel with a level the spec does not define is -32602
// Invalid params (MCP, server utilities: logging); the SDK took any
// string (an MCP walkthrough). A defined level is taken.
func TestSetLevelRefusesAnUnknownLevel(t *testing.T) {
	_, url := newHTTP(t)
	for _, c := range []struct {
		level string
		code  int
	}{{"bogus", -32602}, {"warning", 0}} {
		resp, b := postRPC(t, url, `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"`+c.level+`"}}`, "2025-06-18")
		got := 0
		if i := strings.Index(string(b), `"code":`); i >= 0 {
			var n json.Number
			_ = json.NewDecoder(strings.NewReader(strings.TrimLeft(string(b[i+7:]), " "))).Decode(&n)
			v, _ := n.Int64()
			got = int(v)
		}
		if got != c.code || (c.code != 0 && !strings.Contains(string(b), c.level)) {
			t.Errorf("level %s: %d %s, want error code %d", c.level, resp.StatusCode, b, c.code)
		}
	}
}

// postRPC sends body to the /mcp handler at url as a client of protocol
// version (none when "") with the writer's token, and returns the answer.
func postRPC(t *testing.T, url, body, version string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer writer")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}
