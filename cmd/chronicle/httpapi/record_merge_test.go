package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/events"
)

// A recording whose normalised title and content equal an existing
// memory's is merged into it (one more evidence, confidence unchanged).
// memory_record answered such a merge as a new memory: its own content
// address as id (no memory: GET answered 404, feedback on it failed) and
// initial_confidence 0.8, while the memory it entered held 0.4 (a
// walkthrough's finding). The answer is now the memory the recording is in:
// its id, merged_into, confidence, initial confidence and evidence, over
// HTTP and over MCP.
func TestRecordMergeAnswersTheMemory(t *testing.T) {
	p, _, base := scopedServer(t)
	// a memory of project:a with an id of its producer's choosing, moved
	// to 0.4 by two sources' negative feedback (consensus)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", map[string]any{"specversion": "1.0", "id": "rec-walk", "source": "test/merge",
		"type": string(events.MemoryRecorded), "scope": "project:a", "data": map[string]any{"memory_id": "m-walk", "title": "Quote the refund",
			"description": "d", "content": "Compute the refund first.", "outcome": "success", "source": "explicit"}}); code != 202 {
		t.Fatalf("recording m-walk: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	for _, tok := range []string{"tok-a", "tok-admin"} {
		if code, m := call(t, base, tok, "POST", "/v1/memories/m-walk/feedback", map[string]any{"helpful": false}); code != 200 {
			t.Fatalf("feedback by %s: %d %v", tok, code, m)
		}
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/m-walk", nil); code != 200 || m["confidence"] != 0.4 {
		t.Fatalf("m-walk after two negative signals: %d %v; want confidence 0.4", code, m)
	}

	// the same title and content, spelled otherwise: merged into m-walk
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "quote the REFUND", "description": "other words",
		"content": "Compute  the refund\nfirst.", "outcome": "success"})
	if code != 202 || rec["id"] != "m-walk" || rec["merged_into"] != "m-walk" || rec["confidence"] != 0.4 || rec["initial_confidence"] != 0.8 || rec["evidence"] != 2.0 {
		t.Fatalf("a recording merged into m-walk: %d %v; want id and merged_into m-walk, confidence 0.4, initial_confidence 0.8, evidence 2", code, rec)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+rec["id"].(string), nil); code != 200 || m["evidence"] != 2.0 {
		t.Fatalf("GET the answered id: %d %v; want m-walk with evidence 2", code, m)
	}

	// a new memory: no merged_into, the explicit start 0.8
	code, rec = call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Confirm the cabin", "description": "d",
		"content": "Read the cabin class back to the user.", "outcome": "success"})
	if _, merged := rec["merged_into"]; code != 202 || merged || rec["confidence"] != 0.8 || rec["initial_confidence"] != 0.8 || rec["evidence"] != 1.0 {
		t.Fatalf("a new memory: %d %v; want no merged_into, confidence and initial_confidence 0.8, evidence 1", code, rec)
	}

	// over MCP the same: a third recording of m-walk's title and content
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "merge-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"tok-a", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := mcptest.Structured[struct {
		ID                string  `json:"id"`
		MergedInto        string  `json:"merged_into"`
		Message           string  `json:"message"`
		Confidence        float64 `json:"confidence"`
		InitialConfidence float64 `json:"initial_confidence"`
		Evidence          int     `json:"evidence"`
	}](t, mcptest.Call(t, cs, "memory_record", map[string]any{"title": "Quote the refund", "description": "again",
		"content": "compute the refund first.", "outcome": "success"}))
	if got.ID != "m-walk" || got.MergedInto != "m-walk" || got.Confidence != 0.4 || got.InitialConfidence != 0.8 || got.Evidence != 3 {
		t.Fatalf("memory_record merged over MCP: %+v; want m-walk at 0.4, evidence 3", got)
	}
}
