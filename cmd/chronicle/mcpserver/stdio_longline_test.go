package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A line that starts no JSON-RPC message is dropped up to its newline and
// answered, holding at most the SDK's frame limit of it in memory: the
// filter kept every byte of such a line until its newline, so a client
// sending a line of garbage without a newline (a binary file piped to
// chronicle mcp by mistake) grew the process without bound, where a
// value that starts like a message turns into a pass-through at the limit.
// The line is still answered as a Parse error, and serving goes on.
func TestStdioLongMalformedLineIsBounded(t *testing.T) {
	var out bytes.Buffer
	f := &batchFilter{out: &lockedWriter{w: nopWriteCloser{&out}}}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range mcp.DefaultMaxLineLength/len(chunk) + 4 {
		f.scan(chunk)
		if len(f.value) > mcp.DefaultMaxLineLength+len(chunk) {
			t.Fatalf("the filter holds %d bytes of one malformed line (the frame limit is %d)", len(f.value), mcp.DefaultMaxLineLength)
		}
	}
	f.scan([]byte("\n"))
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil || r.Error.Code != -32700 || string(r.ID) != "null" {
		t.Fatalf("the long line was answered %q (%v), want a Parse error with id null", out.String(), err)
	}
	if f.skipping || f.dropping || len(f.value) != 0 {
		t.Fatalf("after the line: skipping %v, dropping %v, %d bytes held; want a filter ready for the next message", f.skipping, f.dropping, len(f.value))
	}
	// the next message is handed on
	f.scan([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	got, _ := io.ReadAll(io.LimitReader(bytes.NewReader(f.ready), 1<<10))
	if !bytes.Contains(got, []byte(`"method":"ping"`)) {
		t.Fatalf("the message after the long line was not handed on: %q", got)
	}
}
