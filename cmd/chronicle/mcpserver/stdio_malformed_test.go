package mcpserver

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// A line that is no JSON-RPC message is answered — a Parse error (-32700)
// when it is not JSON, an Invalid Request (-32600) when it is JSON but no
// message the SDK takes (a number, {}, another version), with its id when
// it can be read, else null — and the requests after it are served. Found by a new user's walkthrough: "not json" piped
// between two calls ended chronicle mcp (exit 1, "invalid character 'o' in
// literal null"), the requests after it neither answered nor named.
func TestStdioMalformedLineIsAnsweredAndServingGoesOn(t *testing.T) {
	inW, out, done := servePipes(t)
	bad := []struct {
		line string
		code int
	}{
		{"not json", -32700},
		{`{"jsonrpc":"2.0","id":7,"method":nope}`, -32700},
		{`{"jsonrpc":"2.0","id":8,"method":"ping","params":{"a":"unterminated`, -32700},
		{`42`, -32600},
		{`"a string"`, -32600},
		{`{}`, -32600},
		// JSON-RPC but not 2.0: the id is read, and answered
		{`{"jsonrpc":"1.0","id":9,"method":"ping"}`, -32600},
		// not UTF-8, a lone surrogate: the SDK read either as U+FFFD, and
		// a memory was recorded with other text than sent (as /mcp
		// refuses them, a Parse error)
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"A` + "\xff" + `","description":"d","content":"c","outcome":"success"}}}`, -32700},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"A\ud800","description":"d","content":"c","outcome":"success"}}}`, -32700},
		// an object not closed on its line, outside any string: its line
		// ends it (a stdio message holds no newline). Before, it took in
		// every later line, and no later request was answered
		{`{"jsonrpc":"2.0","id":12,"method":"ping"`, -32700},
		{`{bad json`, -32700},
		{`[{"jsonrpc":"2.0","id":13,"method":"ping"}`, -32700},
	}
	lines := []string{initializeLine("2025-06-18"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`}
	for _, b := range bad {
		lines = append(lines, b.line)
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	go io.WriteString(inW, strings.Join(lines, "\n")+"\n")
	var codes []int
	served := false
	for !served || len(codes) < len(bad) {
		if !out.Scan() {
			t.Fatalf("output ended after %d error answers (want %d), request 5 answered %v: %v", len(codes), len(bad), served, out.Err())
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("answer %s: %v", out.Text(), err)
		}
		switch string(r.ID) {
		case "1":
		case "5":
			if r.Result == nil {
				t.Fatalf("request 5 answered %s, want the tools", out.Text())
			}
			served = true
		case "null", "9":
			if (len(codes) == 6) != (string(r.ID) == "9") {
				t.Fatalf("answered %s: the JSON-RPC 1.0 line (id 9) is answered with its id, the others with null", out.Text())
			}
			if r.Error == nil {
				t.Fatalf("answered %s, want an error", out.Text())
			}
			codes = append(codes, r.Error.Code)
		default:
			t.Fatalf("unexpected answer %s", out.Text())
		}
	}
	// the error answers come in the order of the lines: the filter writes
	// them as it reads
	for i, b := range bad {
		if codes[i] != b.code {
			t.Errorf("%q answered %d, want %d", b.line, codes[i], b.code)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("served with an error: %v", err)
	}
}
