package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// slowSearch is a backend whose Search waits for its context, or 10 s,
// and reports which ended it.
type slowSearch struct {
	*fakeBackend
	ended chan error
}

func (b slowSearch) Search(ctx context.Context, q search.Query) (search.Result, error) {
	select {
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return search.Result{}, ctx.Err()
	case <-time.After(10 * time.Second):
		b.ended <- nil
		return search.Result{}, nil
	}
}

// TestHTTPCallGivenUpIsCancelled: a client that gives up on a tools/call
// over /mcp cancels the tool's work, with the Go SDK's client (which
// negotiates 2026-07-28) and with a 2025-06-18 client that hangs up on its
// POST. Before, the stateless transport ran the handler on a context no
// client could cancel, and the backend's search ran its full 10 s (an MCP
// walkthrough, 2026-12-06).
func TestHTTPCallGivenUpIsCancelled(t *testing.T) {
	backend := slowSearch{newFake(), make(chan error, 1)}
	srv := httptest.NewServer(HTTPHandler(backend, Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken}))
	defer srv.Close()
	hc := &http.Client{Transport: header{set: http.Header{"Authorization": {"Bearer reader"}}, base: http.DefaultTransport}}

	ended := func(t *testing.T, start time.Time) {
		t.Helper()
		select {
		case err := <-backend.ended:
			if err == nil {
				t.Fatal("the backend's search ran to its end: the call's cancellation did not reach it")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the backend's search ended %v after the call began", d)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the backend's search did not end")
		}
	}

	t.Run("SDK client", func(t *testing.T) {
		client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		cs, err := client.Connect(mcptest.Context(t), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ctx, cancel := context.WithTimeout(mcptest.Context(t), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "retry"}}); err == nil {
			t.Fatal("the call answered before its context ended")
		}
		ended(t, start)
	})

	t.Run("2025-06-18 POST", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(mcptest.Context(t), 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"retry"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		start := time.Now()
		if resp, err := hc.Do(req); err == nil {
			// the SSE stream's headers may come first: hang up while reading it
			_, err = resp.Body.Read(make([]byte, 1<<16))
			resp.Body.Close()
			if err == nil {
				t.Fatalf("the call answered before its context ended (%s)", resp.Status)
			}
		}
		ended(t, start)
	})
}
