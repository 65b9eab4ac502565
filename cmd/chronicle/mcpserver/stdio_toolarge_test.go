package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A message longer than the SDK's frame limit is answered as an Invalid
// Request with its id, and the requests after it are served: before, the
// filter handed it on and the SDK's reader ended the connection, so
// chronicle mcp exited and every later request went unanswered.
func TestStdioTooLargeMessageIsAnsweredAndServingGoesOn(t *testing.T) {
	inW, out, done := servePipes(t)
	big := strings.Repeat("x", mcp.DefaultMaxLineLength+1<<20)
	lines := []string{
		initializeLine("2025-06-18"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		// the id before the large member: answered with it
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"t","description":"d","content":"` + big + `","outcome":"success"}}}`,
		// the id after it: answered with id null
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory_record","arguments":{"content":"` + big + `"}},"id":13}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
	}
	go func() {
		io.WriteString(inW, strings.Join(lines, "\n")+"\n")
	}()
	var errIDs []string
	served := false
	for !served {
		if !out.Scan() {
			t.Fatalf("output ended after error answers %v, before request 5 was answered: %v", errIDs, out.Err())
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
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
		default:
			if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "longer than 16777216 bytes") {
				t.Fatalf("answered %s, want an Invalid Request naming the limit", out.Text())
			}
			errIDs = append(errIDs, string(r.ID))
		}
	}
	if strings.Join(errIDs, " ") != "12 null" {
		t.Fatalf("the two large messages were answered with ids %v, want [12 null]", errIDs)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("serving ended with %v, want a clean end at the input's end", err)
	}
}

// Of a value too large, at most the frame limit is held, and the filter
// is ready for the next message after it, one that starts on the same line
// included.
func TestStdioTooLargeValueIsBounded(t *testing.T) {
	var out bytes.Buffer
	f := &batchFilter{out: &lockedWriter{w: nopWriteCloser{&out}}}
	f.scan([]byte(`{"jsonrpc":"2.0","id":"a","method":"ping","params":{"s":"`))
	chunk := bytes.Repeat([]byte(`y\"{[`), 1<<18)
	for range mcp.DefaultMaxLineLength/len(chunk) + 4 {
		f.scan(chunk)
		if len(f.value) > mcp.DefaultMaxLineLength+len(chunk) {
			t.Fatalf("the filter holds %d bytes of one value (the frame limit is %d)", len(f.value), mcp.DefaultMaxLineLength)
		}
	}
	f.scan([]byte(`"}}{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"))
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil || r.Error.Code != -32600 || string(r.ID) != `"a"` {
		t.Fatalf("the large value was answered %q (%v), want an Invalid Request with id \"a\"", out.String(), err)
	}
	if f.dropping || f.depth != 0 || f.inStr {
		t.Fatalf("after the value: dropping %v, depth %d, in a string %v; want a filter ready for the next message", f.dropping, f.depth, f.inStr)
	}
	if got := string(bytes.TrimSpace(f.ready)); got != `{"jsonrpc":"2.0","id":2,"method":"ping"}` {
		t.Fatalf("handed on %q, want the ping after the large value", got)
	}
}
