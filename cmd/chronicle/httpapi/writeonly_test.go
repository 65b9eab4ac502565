package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeOnlyServer is scopedServer's tokens and tok-wo, which writes
// project:a and reads nothing; tok-ro reads project:a and writes
// nothing, tok-ra reads project:a and writes project:z.
func writeOnlyServer(t *testing.T) (*pipeline.Pipeline, *httpapi.Server, string) {
	t.Helper()
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "a2", SHA256: access.Hash("tok-a2"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
		{Name: "wo", SHA256: access.Hash("tok-wo"), Write: []string{"project:a"}},
		{Name: "ro", SHA256: access.Hash("tok-ro"), Read: []string{"project:a"}},
		{Name: "ra", SHA256: access.Hash("tok-ra"), Read: []string{"project:a"}, Write: []string{"project:z"}},
		{Name: "ab", SHA256: access.Hash("tok-ab"), Read: []string{"project:a", "project:b"}, Write: []string{"project:b"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
	}}
	api := &httpapi.Server{P: p, Tokens: &tokens}
	srv := httptest.NewServer(conforming(t, api.Handler()))
	t.Cleanup(srv.Close)
	return p, api, srv.URL
}

// A write-only token (tok-wo: writes project:a, reads nothing) reads
// nothing through the answers of its writes: GET /v1/workflows/wf1 is a
// 404 for it, but POST …/resume answered 200 with the whole state, context
// secrets included, POST /v1/sessions/{id}/improve the PAIR view GET
// …/improvement refuses it, feedback the memory's confidence, a recording
// of a guessed title and content merged_into and the evidence, and a
// search's resume its status. Found by a tenant-isolation review; each
// check fails on the code before the fix.
func TestWriteOnlyTokenReadsNothingThroughWrites(t *testing.T) {
	p, api, base := writeOnlyServer(t)
	api.ImproveWait = time.Second
	const secret = "WO-SECRET-51d2"
	ctx := context.Background()
	wfc := client.New(base, "tok-a")
	if _, err := wfc.Update(ctx, "wf1", 0, events.ChannelContext, map[string]any{"note": secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := wfc.Checkpoint(ctx, "wf1", 0); err != nil {
		t.Fatal(err)
	}
	dec, err := wfc.Interrupt(ctx, "wf1", events.DecisionHuman, "approve "+secret+"?", "approve", "reject")
	if err != nil {
		t.Fatal(err)
	}
	envs, sid := sessionIn(t, 3, "project:a", secret)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "search-1", secret)); code != 202 {
		t.Fatalf("search: %d %v", code, m)
	}
	memory := map[string]any{"title": "Check fare rules " + secret, "description": "Before changing flights, check the fare class.", "content": "Look up the reservation, then the fare rules. " + secret, "outcome": "success"}
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", memory)
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	mid := rec["id"].(string)
	waitCaughtUp(t, p)

	noSecret := func(what string, m map[string]any) {
		t.Helper()
		if strings.Contains(fmt.Sprint(m), secret) {
			t.Errorf("%s: the answer shows project:a's secret: %v", what, m)
		}
	}
	// the reads, for comparison: 404s
	if code, m := call(t, base, "tok-wo", "GET", "/v1/workflows/wf1", nil); code != 404 {
		t.Fatalf("GET the workflow as tok-wo: %d %v, want 404", code, m)
	}
	_, missing := call(t, base, "tok-wo", "POST", "/v1/workflows/never-there/resume", map[string]any{})

	t.Run("workflow", func(t *testing.T) {
		// resume and decision answers act on state the caller must read:
		// the read's 404, the same as for an id nobody holds
		for _, path := range []string{"/v1/workflows/wf1/resume", "/v1/workflows/wf1/resume?scope=project:a"} {
			code, m := call(t, base, "tok-wo", "POST", path, map[string]any{})
			if code != 404 || strings.ReplaceAll(fmt.Sprint(m["error"]), "wf1", "ID") != strings.ReplaceAll(fmt.Sprint(missing["error"]), "never-there", "ID") {
				t.Errorf("POST %s as tok-wo: %d %v; want the 404 of an id nobody holds (%v)", path, code, m, missing)
			}
			noSecret(path, m)
		}
		code, m := call(t, base, "tok-wo", "POST", "/v1/workflows/wf1/decisions/"+url.PathEscape(dec.State.PendingDecisions[0].DecisionID), map[string]any{"answer": "nope", "by": "wo"})
		if code != 404 {
			t.Errorf("answering the decision as tok-wo: %d %v, want 404", code, m)
		}
		noSecret("decision answer", m)
		// a replan is computed from the running DAG: the read's 404 too
		code, m = call(t, base, "tok-wo", "POST", "/v1/workflows/wf1/commands", map[string]any{"command": events.CommandReplanDAG, "args": map[string]any{"tools": []string{"x"}}})
		if code != 404 || strings.ReplaceAll(fmt.Sprint(m["error"]), "wf1", "ID") != strings.ReplaceAll(fmt.Sprint(missing["error"]), "never-there", "ID") {
			t.Errorf("replan_dag as tok-wo: %d %v; want the 404 of an id nobody holds (%v)", code, m, missing)
		}
		// a producer that only writes still writes, and is answered what
		// it wrote, not the state
		code, m = call(t, base, "tok-wo", "POST", "/v1/workflows/wf1/updates", map[string]any{"layer": 0, "channel": events.ChannelContext, "update": map[string]any{"from": "wo"}})
		if code != 200 || m["event_id"] == nil || m["position"] == nil || m["state"] != nil {
			t.Errorf("an update as tok-wo: %d %v; want 200 with event_id and position, no state", code, m)
		}
		noSecret("update", m)
		code, m = call(t, base, "tok-wo", "POST", "/v1/workflows/wf1/checkpoints", map[string]any{"layer": 1})
		if code != 200 || m["checkpoint_id"] == nil || m["state"] != nil {
			t.Errorf("a checkpoint as tok-wo: %d %v; want 200 with checkpoint_id, no state", code, m)
		}
		noSecret("checkpoint", m)
		// the reader of the scope still gets the state
		if code, m := call(t, base, "tok-a", "POST", "/v1/workflows/wf1/updates", map[string]any{"layer": 1, "channel": events.ChannelContext, "update": map[string]any{"from": "a"}}); code != 200 || m["state"] == nil {
			t.Errorf("an update as tok-a: %d %v; want the state", code, m)
		}
	})

	t.Run("improve", func(t *testing.T) {
		path := "/v1/sessions/" + url.PathEscape(sid)
		rcode, read := call(t, base, "tok-wo", "GET", path+"/improvement", nil)
		code, m := call(t, base, "tok-wo", "POST", path+"/improve", map[string]any{})
		if rcode != 404 || code != 404 {
			t.Errorf("tok-wo: GET …/improvement %d %v, POST …/improve %d %v; want both 404", rcode, read, code, m)
		}
		noSecret("improve", m)
		// a reader that may not write keeps its 403
		if code, m := call(t, base, "tok-ro", "POST", path+"/improve", map[string]any{}); code != 403 {
			t.Errorf("tok-ro: POST …/improve %d %v; want 403", code, m)
		}
	})

	t.Run("feedback", func(t *testing.T) {
		code, m := call(t, base, "tok-wo", "POST", "/v1/memories/"+mid+"/feedback", map[string]any{"helpful": true})
		if code != 200 || m["new_confidence"] != nil || strings.Contains(fmt.Sprint(m["message"]), "0.") || strings.Contains(fmt.Sprint(m["message"]), "consensus") {
			t.Errorf("feedback as tok-wo: %d %v; want 200 without the confidence", code, m)
		}
		if code, m := call(t, base, "tok-a", "POST", "/v1/memories/"+mid+"/feedback", map[string]any{"helpful": true}); code != 200 || m["new_confidence"] == nil {
			t.Errorf("feedback as tok-a: %d %v; want the confidence", code, m)
		}
	})

	t.Run("record", func(t *testing.T) {
		code, m := call(t, base, "tok-wo", "POST", "/v1/memories", memory)
		if code != 202 || m["id"] != mid {
			t.Fatalf("recording a's memory again as tok-wo: %d %v", code, m)
		}
		for _, k := range []string{"merged_into", "evidence", "confidence", "initial_confidence", "pruned"} {
			if _, ok := m[k]; ok {
				t.Errorf("recording as tok-wo answers %s: %v", k, m)
			}
		}
		if strings.Contains(fmt.Sprint(m["message"]), "merged into the existing") || strings.Contains(fmt.Sprint(m["message"]), "evidence 2") {
			t.Errorf("recording as tok-wo says it merged: %v", m)
		}
		// a new memory gets the same answer's shape
		fresh := map[string]any{"title": "Something new", "description": "new", "content": "new content", "outcome": "success"}
		code, n := call(t, base, "tok-wo", "POST", "/v1/memories", fresh)
		if code != 202 || len(n) != len(m) {
			t.Errorf("a new memory as tok-wo: %d %v; the merge was %v: want the same members", code, n, m)
		}
	})

	t.Run("search", func(t *testing.T) {
		resume := map[string]any{"decision": "approve", "by": "wo"}
		_, gone := call(t, base, "tok-wo", "POST", "/v1/searches/never-there/resume", resume)
		code, m := call(t, base, "tok-wo", "POST", "/v1/searches/search-1/resume", resume)
		if code != 404 || strings.ReplaceAll(fmt.Sprint(m["error"]), "search-1", "ID") != strings.ReplaceAll(fmt.Sprint(gone["error"]), "never-there", "ID") {
			t.Errorf("resuming a's search as tok-wo: %d %v; want the 404 of an id nobody holds (%v)", code, m, gone)
		}
		noSecret("search resume", m)
	})
}

// Over /mcp too, a write-only token's memory_record and memory_feedback
// answers carry no confidence, initial_confidence, evidence nor
// new_confidence member: the routes leave them out, and the tools' typed
// answers read 0 for them (a real confidence) before the members became
// optional. The scope's reader gets them.
func TestWriteOnlyMCPAnswersLeaveOutConfidence(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	ctx := context.Background()
	mcpAs := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "write-only-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	structured := func(what string, res *mcp.CallToolResult, err error) map[string]any {
		t.Helper()
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", what, err, mcptest.Text(res))
		}
		return mcptest.Structured[map[string]any](t, res)
	}
	memory := map[string]any{"title": "Quote the seat map first", "description": "Show the seat map before changing seats.",
		"content": "Read the seat map, then confirm the seat with the user.", "outcome": "success"}
	a, wo := mcpAs("tok-a"), mcpAs("tok-wo")
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_record", Arguments: memory})
	rec := structured("memory_record as tok-a", res, err)
	if rec["confidence"] != 0.8 || rec["initial_confidence"] != 0.8 || rec["evidence"] != 1.0 {
		t.Errorf("memory_record as tok-a: %v, want confidence, initial_confidence and evidence", rec)
	}
	waitCaughtUp(t, p)
	// a's memory again (a merge) and a new one: the same members, none
	// of them the memory's
	for _, args := range []map[string]any{memory, {"title": "Something new", "description": "new", "content": "new content", "outcome": "success"}} {
		res, err := wo.CallTool(ctx, &mcp.CallToolParams{Name: "memory_record", Arguments: args})
		got := structured("memory_record as tok-wo", res, err)
		for _, k := range []string{"confidence", "initial_confidence", "evidence", "merged_into", "pruned"} {
			if _, ok := got[k]; ok {
				t.Errorf("memory_record %q as tok-wo answers %s: %v", args["title"], k, got)
			}
		}
		if got["id"] == nil || got["message"] == nil || strings.Contains(mcptest.Text(res), "confidence\":") {
			t.Errorf("memory_record %q as tok-wo: %v %s, want id and message only", args["title"], got, mcptest.Text(res))
		}
	}
	res, err = wo.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": rec["id"], "helpful": true}})
	fb := structured("memory_feedback as tok-wo", res, err)
	if _, ok := fb["new_confidence"]; ok || fb["success"] != true || strings.Contains(mcptest.Text(res), "new_confidence") {
		t.Errorf("memory_feedback as tok-wo: %v %s, want success without new_confidence", fb, mcptest.Text(res))
	}
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_feedback", Arguments: map[string]any{"memory_id": rec["id"], "helpful": true}})
	if fb := structured("memory_feedback as tok-a", res, err); fb["new_confidence"] == nil {
		t.Errorf("memory_feedback as tok-a: %v, want new_confidence", fb)
	}
}
