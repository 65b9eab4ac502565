package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On a server without tokens (serve's default, what make run starts) the
// /mcp tools answer a loopback client. Before, every tool call was a 403:
// the tools' in-process requests inherited the /mcp request's loopback
// listener address, and with their in-process Host they looked like a DNS
// rebinding page to the check of a tokenless server (a walkthrough,
// 2026-11-30; the tests of /mcp all ran with tokens).
func TestMCPWithoutTokens(t *testing.T) {
	_, c, _ := startAt(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tokenless-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.Base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	rec, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_record", Arguments: map[string]any{"title": "Quote the seat map first",
		"description": "Show the seat map before changing seats.", "content": "Read the seat map, then confirm the seat.", "outcome": "success"}})
	if err != nil || rec.IsError {
		t.Fatalf("memory_record over /mcp without tokens: %v %s", err, mcptest.Text(rec))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "seat map", "min_confidence": 0}})
	if err != nil || res.IsError || strings.Contains(mcptest.Text(res), "403") {
		t.Fatalf("memory_search over /mcp without tokens: %v %s", err, mcptest.Text(res))
	}
}
