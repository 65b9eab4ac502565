package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// rpcAnswer is one JSON-RPC answer as a test reads it.
type rpcAnswer struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

func answersByID(t *testing.T, out string) map[string]rpcAnswer {
	t.Helper()
	got := map[string]rpcAnswer{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var a rpcAnswer
		if json.Unmarshal([]byte(line), &a) != nil {
			t.Fatalf("not JSON: %s", line)
		}
		got[string(a.ID)] = a
	}
	return got
}

const initLines = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`

// Two messages on one stdin line are both answered, and so is every later
// line. Before, the SDK's reader ended the connection on the second
// ("invalid trailing data at the end of stream"): chronicle mcp exited 1
// and left them and everything after unanswered (an MCP mutation
// walkthrough, 2026-12-03).
func TestTwoMessagesOnOneLine(t *testing.T) {
	out := pipeLines(t, newFake(), []string{initLines,
		`{"jsonrpc":"2.0","id":46,"method":"ping"} {"jsonrpc":"2.0","id":47,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":48,"method":"ping"}{"jsonrpc":"2.0","id":49,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":99,"method":"ping"}`})
	got := answersByID(t, out)
	for _, id := range []string{"46", "47", "48", "49", "99"} {
		if a, ok := got[id]; !ok || a.Result == nil {
			t.Errorf("ping %s: %+v, want a result\n%s", id, a, out)
		}
	}
}

// A /mcp body with two messages is a -32700 400 naming the rule: before,
// the first was answered and the second dropped without a word.
func TestTwoMessagesInOneBody(t *testing.T) {
	_, url := newHTTP(t)
	resp, body := postRPC(t, url, `{"jsonrpc":"2.0","id":46,"method":"ping"} {"jsonrpc":"2.0","id":47,"method":"ping"}`, "2025-06-18")
	var a rpcAnswer
	_ = json.Unmarshal(body, &a)
	if resp.StatusCode != 400 || a.Error == nil || a.Error.Code != -32700 || !strings.Contains(a.Error.Message, "more than one JSON value") {
		t.Fatalf("%d %s, want a 400 -32700 naming the rule", resp.StatusCode, body)
	}
}

// A /mcp body that is not JSON is a 400 with a JSON-RPC Parse error
// (-32700, the id null) saying where it breaks, as stdio answers such a
// line. Before, the SDK answered a text/plain 400 with Go's decoder text
// (an MCP mutation walkthrough, 2026-12-03).
func TestMalformedBodyIsAParseError(t *testing.T) {
	_, url := newHTTP(t)
	for _, c := range []struct{ body, says string }{
		{`{"jsonrpc":"2.0","id":46,"method":nope}`, "at byte 36"},
		{`{"jsonrpc":"2.0","id":46,"method":"ping"`, "ends inside a value"},
		{``, "the body is empty"},
		{`not json`, "at byte 2"},
	} {
		resp, body := postRPC(t, url, c.body, "2025-06-18")
		var a rpcAnswer
		err := json.Unmarshal(body, &a)
		if resp.StatusCode != 400 || err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || a.Error == nil || a.Error.Code != -32700 ||
			!strings.Contains(string(body), `"id":null`) || !strings.Contains(a.Error.Message, c.says) {
			t.Errorf("%q: %d %s %s, want a 400 JSON-RPC -32700 with the id null saying %q", c.body, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.says)
		}
	}
}

// A number beyond a float64 is -32602 naming its pointer, and a member
// repeated in the message or its params (a second tools/call name, which
// ran the last one) is -32600 naming it, over stdio and /mcp, with the id.
// Before: the SDK's text named a Go struct field and type, and the second
// name was run (an MCP mutation walkthrough, 2026-12-03).
func TestHugeNumbersAndRepeatedMembersAreRefused(t *testing.T) {
	cases := []struct {
		msg, id string
		code    int
		says    string
	}{
		{`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":1e400}}}`, "21", -32602, "/params/arguments/query: number 1e400 is beyond"},
		{`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"memory_search","name":"memory_record","arguments":{"title":"t","description":"d","content":"c","outcome":"success"}}}`, "22", -32600, "/params/name: a member given twice"},
		{`{"jsonrpc":"2.0","id":23,"id":24,"method":"ping"}`, "null", -32600, "/id: a member given twice"},
		{`{"jsonrpc":"2.0","id":25,"params":{}}`, "25", -32600, "a request names its method"},
	}
	check := func(t *testing.T, transport string, a rpcAnswer, ok bool, c struct {
		msg, id string
		code    int
		says    string
	}) {
		t.Helper()
		if !ok || a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.says) || strings.Contains(a.Error.Message, "Go ") {
			t.Errorf("%s %s: %+v, want %d saying %q", transport, c.msg, a.Error, c.code, c.says)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		lines := []string{initLines}
		for _, c := range cases {
			lines = append(lines, c.msg)
		}
		fake := newFake()
		got := answersByID(t, pipeLines(t, fake, lines))
		for _, c := range cases {
			a, ok := got[c.id]
			check(t, "stdio", a, ok, c)
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("%d calls reached the backend", n)
		}
	})
	t.Run("http", func(t *testing.T) {
		fake, url := newHTTP(t)
		for _, c := range cases {
			_, body := postRPC(t, url, c.msg, "2025-06-18")
			var a rpcAnswer
			err := json.Unmarshal(body, &a)
			check(t, "http", a, err == nil && string(a.ID) == c.id, c)
		}
		if n := fake.ncalls(); n != 0 {
			t.Errorf("%d calls reached the backend", n)
		}
	})
}

// A second initialize over stdio is -32600 Invalid Request with its id,
// and the connection goes on. Before, the SDK answered the error code 0,
// which JSON-RPC does not define (an MCP mutation walkthrough,
// 2026-12-03).
func TestSecondInitializeIsAnInvalidRequest(t *testing.T) {
	out := pipeLines(t, newFake(), []string{initLines,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"6","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":99,"method":"ping"}`})
	got := answersByID(t, out)
	for _, id := range []string{"5", `"6"`} {
		if a, ok := got[id]; !ok || a.Error == nil || a.Error.Code != -32600 || !strings.Contains(a.Error.Message, "initialized once") {
			t.Errorf("second initialize %s: %+v, want -32600\n%s", id, a, out)
		}
	}
	if a, ok := got["99"]; !ok || a.Result == nil {
		t.Errorf("ping after it: %+v\n%s", a, out)
	}
}
