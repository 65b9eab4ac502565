package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// Every 400 of the workflow write routes and of the suggestion routes
// names the body's member by its pointer, with the reason: a fork without
// workflow_id or checkpoint_id, a resume or fork whose checkpoint_id is
// not a checkpoint id, a policy that is not an id (these four answered an
// error text alone: a walkthrough, 2026-11-30).
func TestWorkflowBadRequestsNameTheirMember(t *testing.T) {
	_, post, _ := workflowAPI(t)
	if code, m := post("/v1/workflows/wp1/updates", `{"channel":"messages","update":"first"}`); code != http.StatusOK {
		t.Fatalf("update: %d %v", code, m)
	}
	for _, tc := range []struct{ path, body, pointer, reason string }{
		{"/v1/workflows/wp1/fork", `{"checkpoint_id":"chronicle.workflows:0:0"}`, "/workflow_id", "required"},
		{"/v1/workflows/wp1/fork", `{"workflow_id":"wp2"}`, "/checkpoint_id", "required"},
		{"/v1/workflows/wp1/fork", `{"workflow_id":"a b","checkpoint_id":"chronicle.workflows:0:0"}`, "/workflow_id", "not allowed"},
		{"/v1/workflows/wp1/fork", `{"workflow_id":"wp2","checkpoint_id":"junk"}`, "/checkpoint_id", `"junk" is not chronicle.workflows`},
		{"/v1/workflows/wp1/resume", `{"checkpoint_id":"junk"}`, "/checkpoint_id", `"junk" is not chronicle.workflows`},
		{"/v1/workflows/suggest", `{"intent":"book a flight","policy":"bad policy"}`, "/policy", "not allowed"},
		{"/v1/workflows/suggest/feedback", `{"policy":"bad policy","suggestion_id":"sg-1","accepted":true,"mode":"suggestion","confidence":0.5}`, "/policy", "not allowed"},
	} {
		code, m := post(tc.path, tc.body)
		if code != http.StatusBadRequest || m["pointer"] != tc.pointer || !strings.Contains(fmt.Sprint(m["reason"]), tc.reason) {
			t.Errorf("POST %s %s: %d %v; want 400 at %s, the reason saying %q", tc.path, tc.body, code, m, tc.pointer, tc.reason)
		}
	}
}

// A decision's options must be answerable: an empty option, which no
// answer could match, and one named twice are 400s naming the item (both
// were accepted; a human decision offering [""] left its workflow waiting
// for good: a walkthrough, 2026-11-30). Nothing reaches the log.
func TestDecisionOptionsAreAnswerable(t *testing.T) {
	_, post, logged := workflowAPI(t)
	if code, m := post("/v1/workflows/wo1/updates", `{"channel":"messages","update":"first"}`); code != http.StatusOK {
		t.Fatalf("update: %d %v", code, m)
	}
	before := logged()
	for _, tc := range []struct{ body, pointer string }{
		{`{"decision_id":"h1","kind":"human","question":"q","options":[""]}`, "/options/0"},
		{`{"decision_id":"h2","kind":"human","question":"q","options":["a","b","a"]}`, "/options/2"},
	} {
		if code, m := post("/v1/workflows/wo1/decisions", tc.body); code != http.StatusBadRequest || m["pointer"] != tc.pointer {
			t.Errorf("POST decisions %s: %d %v; want 400 at %s", tc.body, code, m, tc.pointer)
		}
	}
	if got := logged(); got != before {
		t.Fatalf("refused decisions reached the log: %d records, %d before", got, before)
	}
	if code, m := post("/v1/workflows/wo1/decisions", `{"decision_id":"h3","kind":"human","question":"q","options":["a","b"]}`); code != http.StatusOK {
		t.Fatalf("distinct options: %d %v", code, m)
	}
}

// A fork whose parent's state is too large for one event (the fork's
// event carries it) is a 413 that says so: the 70-byte request was told
// "event: /: 1200838 bytes encoded, above the … limit" (a walkthrough,
// 2026-11-30).
func TestForkTooLargeSaysWhy(t *testing.T) {
	_, post, _ := workflowAPI(t)
	big := strings.Repeat("x", 400_000)
	for i := range 3 {
		if code, m := post("/v1/workflows/wbig/updates", fmt.Sprintf(`{"channel":"messages","update":"%d%s"}`, i, big)); code != http.StatusOK {
			t.Fatalf("update %d: %d %v", i, code, m)
		}
	}
	code, m := post("/v1/workflows/wbig/checkpoints", `{"layer":0}`)
	if code != http.StatusOK {
		t.Fatalf("checkpoint: %d %v", code, m)
	}
	cid := fmt.Sprint(m["checkpoint_id"])
	code, m = post("/v1/workflows/wbig/fork", fmt.Sprintf(`{"workflow_id":"wbig2","checkpoint_id":%q}`, cid))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(fmt.Sprint(m["error"]), "the parent's state") {
		t.Fatalf("fork of a parent too large: %d %v; want 413 saying the parent's state is too large", code, m)
	}
}

// A checkpoint id that names no checkpoint of the workflow is named as
// the member or parameter it came from: a resume's checkpoint_id of
// another workflow is a 404 at /checkpoint_id, and a malformed id in the
// checkpoint read's path a 400 naming the path parameter, not "no such
// checkpoint" (a 404's words; a workflows walkthrough, 2026-12-06).
func TestCheckpointIDRefusalsNameTheirSource(t *testing.T) {
	_, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	m.w(c.Update(ctx, "cp-a", 0, events.ChannelTasks, map[string]any{"id": "t"}))
	cp := m.w(c.Checkpoint(ctx, "cp-a", 0))
	m.w(c.Update(ctx, "cp-b", 0, events.ChannelTasks, map[string]any{"id": "t"}))
	code, body := call(t, c.Base, "", "POST", "/v1/workflows/cp-b/resume", map[string]any{"checkpoint_id": cp.CheckpointID})
	if code != http.StatusNotFound || body["pointer"] != "/checkpoint_id" || body["reason"] == nil {
		t.Errorf("resume with another workflow's checkpoint: %d %v, want a 404 at /checkpoint_id", code, body)
	}
	code, body = call(t, c.Base, "", "GET", "/v1/workflows/cp-a/checkpoints/garbage", nil)
	if msg := fmt.Sprint(body["error"]); code != http.StatusBadRequest || body["parameter"] != "checkpoint_id" || strings.HasPrefix(msg, "no such checkpoint") || !strings.Contains(msg, `"garbage" is not chronicle.workflows`) {
		t.Errorf("a malformed checkpoint id in the path: %d %v, want a 400 naming the parameter", code, body)
	}
}
