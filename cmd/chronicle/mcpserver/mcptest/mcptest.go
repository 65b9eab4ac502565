// Package mcptest holds the helpers of tests that drive the memory tools
// with the official MCP Go SDK client: calling a tool, reading its answer
// and collecting the server process's stderr. mcpserver's own tests (fake
// backend) and the end-to-end tests of `chronicle mcp` against a running
// `chronicle serve` share them.
package mcptest

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Context is t's context bounded to 30 s, cancelled when the test ends.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Server is an MCP server process on stdin/stdout, driven through the
// SDK's command transport.
type Server struct {
	Session *mcp.ClientSession
	Cmd     *exec.Cmd
	// Stderr is the process's stderr, for failure messages.
	Stderr *Buffer
}

// Start starts cmd and connects an SDK client to it; a failed connection
// fails the test.
func Start(t *testing.T, cmd *exec.Cmd) *Server {
	t.Helper()
	s := &Server{Cmd: cmd, Stderr: new(Buffer)}
	cmd.Stderr = s.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	var err error
	if s.Session, err = client.Connect(Context(t), &mcp.CommandTransport{Command: cmd}, nil); err != nil {
		t.Fatalf("connect to %s: %v (stderr: %s)", cmd.Path, err, s.Stderr.String())
	}
	return s
}

// Close closes the session, which closes the server's stdin: the process
// must then exit with status 0.
func (s *Server) Close(t *testing.T) {
	t.Helper()
	if err := s.Session.Close(); err != nil {
		t.Errorf("close: %v (stderr: %s)", err, s.Stderr.String())
	}
	if s.Cmd.ProcessState == nil || !s.Cmd.ProcessState.Success() {
		t.Errorf("server process: %v (stderr: %s)", s.Cmd.ProcessState, s.Stderr.String())
	}
}

// Call calls a tool; a protocol error fails the test (tool errors are
// results).
func Call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(Context(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error: %v", tool, args, err)
	}
	return res
}

// Text is the text content of a result.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Structured decodes a successful result's structured content into T; a
// tool error or a field T does not have fails the test.
func Structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	if res.IsError {
		t.Fatalf("tool error: %s", Text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

// WantToolError checks res is a tool error whose text contains every want.
func WantToolError(t *testing.T, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error containing %q, got success %s", want, Text(res))
	}
	for _, w := range want {
		if !strings.Contains(Text(res), w) {
			t.Errorf("tool error %q does not contain %q", Text(res), w)
		}
	}
}

// Buffer is a strings.Builder safe for the copying goroutine of an
// exec.Cmd (a server's stderr) and the test reading it.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
