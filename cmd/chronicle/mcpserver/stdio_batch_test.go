package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// initializeLine is an initialize request (id 1) asking for version.
func initializeLine(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`, version)
}

// servePipes serves the memory tools (a fake backend) on newline-delimited
// JSON-RPC over pipes, as ServeStdio does on stdin and stdout: it returns
// the input's writer, a scanner of the output's lines, and the channel
// serveDraining's error comes on once the input is closed.
func servePipes(t *testing.T) (*io.PipeWriter, *bufio.Scanner, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveDraining(ctx, New(newFake(), Options{Caller: stdioCaller}), inR, outW, 10*time.Second)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	return inW, lines, done
}

// batchLine is a JSON-RPC batch of a tools/list (id 2) and a ping (id 3).
// (The SDK never answers a batch holding a notification: it waits for the
// notification's answer too.)
const batchLine = `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`

// wireResponse is a JSON-RPC response as written.
type wireResponse struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkInit checks an initialize answer names version.
func checkInit(t *testing.T, r wireResponse, version string) {
	t.Helper()
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(r.Result, &res) != nil || res.ProtocolVersion != version {
		t.Fatalf("initialize answered %s %+v, want protocol version %s", r.Result, r.Error, version)
	}
}

// A JSON-RPC batch is answered as the protocol version negotiated in
// initialize says: refused under 2025-06-18 and later (which removed
// batching; the SDK refuses it, and so does /mcp, with a 400), each call
// of it answered with an Invalid Request error naming the version, the
// connection kept and the next request served; served under 2025-03-26.
// Before, the stdio wrapper (drainConn) hid the negotiated version from the
// SDK's connection, which so served every batch whatever the version
// (the last closing note's gap: "stdio wrapper loses negotiated protocol
// version (batches served)"). The answers of later requests carry nothing
// of the version, and the initialize answer names the negotiated one
// either way: the batch gate was the only thing the version decided on
// the connection.
func TestStdioBatchFollowsTheNegotiatedVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		refused bool
		answer  string // the version initialize answers: version when empty
	}{
		{"2025-06-18", true, ""}, {"2025-11-25", true, ""}, {"2025-03-26", false, ""}, {"2024-11-05", false, ""},
		// a version the server does not take: it answers its own, later
		// than 2025-06-18, so a batch is refused
		{"2024-01-01", true, "2025-11-25"}, {"2026-07-28", true, "2025-11-25"},
	} {
		if c.answer == "" {
			c.answer = c.version
		}
		for _, piped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s piped=%v", c.version, piped), func(t *testing.T) {
				inW, lines, done := servePipes(t)
				next := func() string {
					t.Helper()
					if !lines.Scan() {
						t.Fatalf("no more output: %v", lines.Err())
					}
					return lines.Text()
				}
				send := func(s ...string) {
					t.Helper()
					if _, err := io.WriteString(inW, strings.Join(s, "\n")+"\n"); err != nil {
						t.Fatal(err)
					}
				}
				after := `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`
				if piped {
					all := strings.Join([]string{initializeLine(c.version), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, batchLine, after}, "\n") + "\n"
					go io.WriteString(inW, all) // all at once, before any answer is read
				} else {
					send(initializeLine(c.version))
				}
				if !piped {
					// interactive: the initialize answer first, then the rest
					var init wireResponse
					if l := next(); json.Unmarshal([]byte(l), &init) != nil || init.ID == nil || *init.ID != 1 {
						t.Fatalf("initialize answered %s", l)
					}
					checkInit(t, init, c.answer)
					send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, batchLine, after)
				}
				// the batch's answer and the next request's (and, piped, the
				// initialize answer), in any order: JSON-RPC answers are not
				// ordered, the calls run concurrently
				var batch []wireResponse
				var r wireResponse
				n := 2
				if piped {
					n = 3
				}
				for range n {
					l := next()
					var one wireResponse
					switch {
					case strings.HasPrefix(l, "["):
						if json.Unmarshal([]byte(l), &batch) != nil || len(batch) != 2 {
							t.Fatalf("the batch was answered %s, want an array of two answers (ids 2 and 3)", l)
						}
					case json.Unmarshal([]byte(l), &one) == nil && one.ID != nil && *one.ID == 1:
						checkInit(t, one, c.answer)
					case json.Unmarshal([]byte(l), &r) != nil || r.ID == nil || *r.ID != 4 || r.Result == nil:
						t.Fatalf("answered %s, want the batch's answers or the tools of id 4", l)
					}
				}
				if batch == nil || r.ID == nil {
					t.Fatalf("the batch answered %v, request 4 %v: want both answered (the connection goes on after the batch)", batch, r.ID)
				}
				for _, r := range batch {
					switch {
					case r.ID == nil:
						t.Errorf("an answer without an id: %+v", r)
					case c.refused && (r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batching is not supported") || !strings.Contains(r.Error.Message, c.version)):
						t.Errorf("version %s: request %d answered %+v %.100s, want Invalid Request (-32600) saying batching is not supported in %s", c.version, *r.ID, r.Error, r.Result, c.version)
					case !c.refused && (r.Error != nil || r.Result == nil):
						t.Errorf("version %s: request %d answered %+v, want a result (batches are served before 2025-06-18)", c.version, *r.ID, r.Error)
					}
				}
				inW.Close()
				if err := <-done; err != nil {
					t.Fatalf("served with an error: %v", err)
				}
			})
		}
	}
}

// A batch holding no JSON-RPC message is answered as JSON-RPC 2.0 (section
// 6) says, under every protocol version: `[]` with one Invalid Request
// error, `[1,2]` with an array of two, each with the id null, and the
// connection goes on. Before, neither got an answer (an MCP mutation
// walkthrough, 2026-12-03).
func TestStdioBatchOfNoMessageIsAnswered(t *testing.T) {
	for _, version := range []string{"2025-03-26", "2025-06-18"} {
		for _, c := range []struct {
			line string
			n    int // answers in the array; 0: one answer, not an array
		}{{`[]`, 0}, {` [ ] `, 0}, {`[1,2]`, 2}, {`["a", null, []]`, 3}} {
			t.Run(version+" "+c.line, func(t *testing.T) {
				inW, lines, done := servePipes(t)
				next := func() string {
					t.Helper()
					if !lines.Scan() {
						t.Fatalf("no more output: %v", lines.Err())
					}
					return lines.Text()
				}
				if _, err := io.WriteString(inW, initializeLine(version)+"\n"); err != nil {
					t.Fatal(err)
				}
				next()
				if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+c.line+"\n"+`{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n"); err != nil {
					t.Fatal(err)
				}
				var errs []wireResponse
				got := next()
				if c.n == 0 {
					var one wireResponse
					if json.Unmarshal([]byte(got), &one) != nil {
						t.Fatalf("%s answered %s, want one Invalid Request", c.line, got)
					}
					errs = append(errs, one)
				} else if json.Unmarshal([]byte(got), &errs) != nil || len(errs) != c.n {
					t.Fatalf("%s answered %s, want an array of %d Invalid Requests", c.line, got, c.n)
				}
				for _, e := range errs {
					if e.ID != nil || e.Error == nil || e.Error.Code != -32600 || !strings.Contains(got, `"id":null`) {
						t.Fatalf("%s answered %s, want Invalid Request (-32600) with the id null", c.line, got)
					}
				}
				var r wireResponse
				if l := next(); json.Unmarshal([]byte(l), &r) != nil || r.ID == nil || *r.ID != 4 || r.Error != nil {
					t.Fatalf("the ping after it answered %s", l)
				}
				inW.Close()
				if err := <-done; err != nil {
					t.Fatalf("served with an error: %v", err)
				}
			})
		}
	}
}
