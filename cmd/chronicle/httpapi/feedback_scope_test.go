package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Feedback naming a scope the caller may neither read nor write answers
// the same over HTTP and MCP, and the same as for a memory that does not
// exist: POST /v1/memories/{id}/feedback?scope=project:a is a 404 "memory
// not found", and memory_feedback with scope project:a says "memory not
// found" (it said "may not write project:a" while the route said 404; the
// 404 is the answer that tells less). A caller that reads the scope but
// may not write it is told so by both. Found by a tenant-isolation
// review; the MCP half fails on the code before.
func TestFeedbackOnAScopeItCannotReadIsNotFound(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	id := recordSeatMap(t, base, "tok-a")
	waitCaughtUp(t, p)
	ctx := context.Background()
	mcpAs := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "feedback-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	feedback := func(cs *mcp.ClientSession, mem string) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": mem, "helpful": true, "scope": "project:a"}})
		if err != nil || !res.IsError {
			t.Fatalf("memory_feedback on %s in project:a: %v %s; want a tool error", mem, err, mcptest.Text(res))
		}
		return mcptest.Text(res)
	}
	b := mcpAs("tok-b")
	for _, mem := range []string{id, "mem-never-there"} {
		code, m := call(t, base, "tok-b", "POST", "/v1/memories/"+mem+"/feedback?scope=project:a", map[string]any{"helpful": true})
		if code != 404 || !strings.Contains(m["error"].(string), "memory not found") {
			t.Errorf("HTTP feedback as tok-b on %s in project:a: %d %v; want 404 memory not found", mem, code, m)
		}
		if msg := feedback(b, mem); !strings.Contains(msg, "memory not found") || strings.Contains(msg, "project:a") {
			t.Errorf("MCP feedback as tok-b on %s in project:a: %q; want memory not found, as the route's 404", mem, msg)
		}
	}
	// reading the scope, not writing it: both say it may not write
	code, m := call(t, base, "tok-ra", "POST", "/v1/memories/"+id+"/feedback?scope=project:a", map[string]any{"helpful": true})
	if code != 403 || !strings.Contains(m["error"].(string), "may not write") {
		t.Errorf("HTTP feedback as tok-ra: %d %v; want 403", code, m)
	}
	if msg := feedback(mcpAs("tok-ra"), id); !strings.Contains(msg, "may not write project:a") {
		t.Errorf("MCP feedback as tok-ra: %q; want may not write project:a", msg)
	}
}

// A feedback whose comment makes its event too large is a 413 naming
// /comment, permanent; it was a 503 "retry later" with Retry-After, which
// an agent retries for ever (a walkthrough, 2026-11-30: a 2 MB comment).
func TestFeedbackCommentTooLargeIsA413(t *testing.T) {
	p, _, base := scopedServer(t)
	id := recordSeatMap(t, base, "tok-a")
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": true, "comment": strings.Repeat("x", 1_000_000)})
	// the text names the comment too (it said "event 0: /: … bytes
	// encoded", POST /v1/events' words: an OpenAPI walkthrough)
	if code != http.StatusRequestEntityTooLarge || m["pointer"] != "/comment" || !strings.HasPrefix(fmt.Sprint(m["error"]), "comment: ") {
		t.Fatalf("a 1 MB comment: %d %v; want 413 naming /comment", code, m)
	}
}

// On a server without API tokens every caller is one source (token:local),
// so a signal waiting for consensus cannot get its second source from
// them: the answer says so, over HTTP and MCP, and how to get one. It said
// a second source would come (a walkthrough, 2026-11-30: make run's server,
// every feedback pending for ever). A server with tokens says nothing of it.
func TestFeedbackOnATokenlessServerSaysOneSource(t *testing.T) {
	p, srv := setup(t)
	id := recordSeatMap(t, srv.URL, "")
	waitCaughtUp(t, p)
	code, m := call(t, srv.URL, "", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
	if msg, _ := m["message"].(string); code != 200 || !strings.Contains(msg, "no API tokens") || !strings.Contains(msg, "token:local") {
		t.Fatalf("HTTP feedback on a server without tokens: %d %v; want the message to say every caller is one source", code, m)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "feedback-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": id, "helpful": true}})
	if err != nil || res.IsError || !strings.Contains(mcptest.Text(res), "no API tokens") {
		t.Fatalf("MCP feedback on a server without tokens: %v %s", err, mcptest.Text(res))
	}

	p2, _, base := scopedServer(t)
	id = recordSeatMap(t, base, "tok-a")
	waitCaughtUp(t, p2)
	code, m = call(t, base, "tok-a", "POST", "/v1/memories/"+id+"/feedback", map[string]any{"helpful": false})
	if msg, _ := m["message"].(string); code != 200 || !strings.Contains(msg, "signal stored") || strings.Contains(msg, "no API tokens") {
		t.Fatalf("HTTP feedback with a token: %d %v", code, m)
	}
}

// recordSeatMap records the seat-map memory in the token's default write
// scope through base and returns its id.
func recordSeatMap(t *testing.T, base, token string) string {
	t.Helper()
	code, rec := call(t, base, token, "POST", "/v1/memories", map[string]any{"title": "Quote the seat map first",
		"description": "Show the seat map before changing seats.", "content": "Read the seat map, then confirm the seat with the user.", "outcome": "success"})
	if code != 202 {
		t.Fatalf("recording: %d %v", code, rec)
	}
	return rec["id"].(string)
}
