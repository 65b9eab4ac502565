package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Searching is reading: a search writes usage (memory.retrieved.v1) only
// for hits in scopes the caller may write. Before, every hit got a usage
// event in its scope: three tokens that may not write project:a (ro reads
// it only, ra writes project:z, ab writes project:b) lifted a project:a
// memory's usage_count 0 → 3 by searching, and tok-a's single feedback
// then applied alone (0.80 → 0.60) instead of waiting for consensus; a
// token writing only project:b added usage to project:a's memories.
// Found by a tenant-isolation review; fails on the code before.
func TestSearchByAReaderWritesNoUsage(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Quote the seat map first",
		"description": "Show the seat map before changing seats.", "content": "Read the seat map, then confirm the seat with the user.",
		"outcome": "success", "scope": "project:a"})
	if code != 202 {
		t.Fatalf("recording: %d %v", code, rec)
	}
	id := rec["id"].(string)
	waitCaughtUp(t, p)
	q := "/v1/memories/search?min_confidence=0&limit=1&scope=project:a&query=" + url.QueryEscape("seat map")
	for _, tok := range []string{"tok-ro", "tok-ra", "tok-ab"} {
		if code, m := call(t, base, tok, "GET", q, nil); code != 200 || len(m["memories"].([]any)) != 1 {
			t.Fatalf("search as %s: %d %v", tok, code, m)
		}
	}
	// and over MCP (/mcp calls the same route as the caller)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "usage-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"tok-ra", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "seat map", "scope": "project:a", "min_confidence": 0}}); err != nil || res.IsError || !strings.Contains(mcptest.Text(res), id) {
		t.Fatalf("memory_search over /mcp as tok-ra: %v %s", err, mcptest.Text(res))
	}
	waitCaughtUp(t, p)
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+id, nil); code != 200 || m["usage_count"] != 0.0 || m["retrievals"] != nil {
		t.Fatalf("after four searches by tokens that may not write project:a: %d %v; want usage_count 0", code, m)
	}
	code, fb := call(t, base, "tok-a", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
	if code != 200 || fb["new_confidence"] != 0.8 || !strings.HasPrefix(fb["message"].(string), "signal stored") {
		t.Fatalf("tok-a's single feedback: %d %v; want stored for consensus, confidence 0.8", code, fb)
	}
	// a caller that writes the scope still counts
	if code, m := call(t, base, "tok-a2", "GET", q, nil); code != 200 || len(m["memories"].([]any)) != 1 {
		t.Fatalf("search as tok-a2: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+id, nil); code != 200 || m["retrievals"] != 1.0 || m["usage_count"] != 2.0 {
		t.Fatalf("after a search by a writer of project:a: %d %v; want 1 retrieval, usage_count 2 (tok-a's signal and tok-a2's search)", code, m)
	}
}
