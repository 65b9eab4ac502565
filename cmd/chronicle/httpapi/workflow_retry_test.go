package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// workflowAPI starts a one-partition pipeline with the API in front: post
// sends a JSON body to a path and decodes the answer; logged is how many
// records chronicle.workflows holds.
func workflowAPI(t *testing.T) (p *pipeline.Pipeline, post func(path, body string) (int, map[string]any), logged func() int64) {
	t.Helper()
	return workflowAPIWith(t, nil)
}

// workflowAPIWith is workflowAPI with set, when not nil, called on the
// server before it serves.
func workflowAPIWith(t *testing.T, set func(*httpapi.Server)) (p *pipeline.Pipeline, post func(path, body string) (int, map[string]any), logged func() int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	api := &httpapi.Server{P: p}
	if set != nil {
		set(api)
	}
	srv := httptest.NewServer(conforming(t, api.Handler()))
	t.Cleanup(srv.Close)
	post = func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	logged = func() int64 {
		t.Helper()
		l, err := p.Lag(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, x := range l {
			if x.Processor == workflows.Name {
				n += x.End
			}
		}
		return n
	}
	return p, post, logged
}

// TestWorkflowRetryAndReusedID: a workflow write retried with its
// event_id is a plain duplicate (200, the earlier result, nothing
// dead-lettered), and the same event_id with another write is a 409
// naming /event_id that writes nothing. Found by a new user's walkthrough:
// the route stamped the wall clock on every request, so a byte-identical
// retry was dead-lettered as a conflicting duplicate, while a different
// write under a used id answered 200 and was silently dropped.
func TestWorkflowRetryAndReusedID(t *testing.T) {
	p, post, end := workflowAPI(t)
	update := func(body string) (int, map[string]any) {
		t.Helper()
		return post("/v1/workflows/wf2/updates", body)
	}
	first := `{"event_id":"e-1","channel":"messages","update":"first"}`
	var pos any
	for i := range 2 {
		code, m := update(first)
		if code != http.StatusOK {
			t.Fatalf("write %d: %d %v", i+1, code, m)
		}
		// the retry answers the write's own position, not the
		// duplicate record's the processor dropped
		if i == 0 {
			pos = m["position"]
		} else if m["position"] != pos {
			t.Fatalf("the retry answered position %v; the write is at %v", m["position"], pos)
		}
	}
	logged := end()
	code, m := update(`{"event_id":"e-1","channel":"messages","update":"DIFFERENT"}`)
	// no index: that is POST /v1/events' member, the event's place in its
	// batch (it was "index": 0 here: an OpenAPI walkthrough)
	if _, indexed := m["index"]; code != http.StatusConflict || m["pointer"] != "/event_id" || indexed {
		t.Fatalf("another write under a used event_id: %d %v; want 409 naming /event_id, without index", code, m)
	}
	if got := end(); got != logged {
		t.Fatalf("the refused write reached the log: %d records, %d before", got, logged)
	}
	// an event_id is the workflow's own: another workflow, in this scope
	// or another, may use it for another write (found by an analyst's
	// walkthrough: every workflow route wrote the same source, so one
	// tenant's ids answered 409 in another's workflows)
	for _, path := range []string{"/v1/workflows/wf3/updates", "/v1/workflows/wf2/updates?scope=project:b"} {
		if code, m := post(path, `{"event_id":"e-1","channel":"messages","update":"another workflow's"}`); code != http.StatusOK {
			t.Fatalf("POST %s with a used event_id of another workflow: %d %v; want 200", path, code, m)
		}
	}
	st, _, err := workflows.Get(p.Store, "org:default/wf2")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 1 {
		t.Fatalf("messages %s; want the one first write", st.Messages)
	}
	// the retry was a plain duplicate: no conflicting duplicate counted
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "chronicle_conflicting_duplicates_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Fatalf("chronicle_conflicting_duplicates_total %v after a retry; want 0", v)
			}
		}
	}
}

// TestWorkflowRefusalNamesTheReason: a workflow write the processor would
// reject on the current state answers with its reason and JSON pointer —
// 400 for a bad write, 409 when the state refuses a well-formed one — and
// writes nothing. Found by a new user's walkthrough: every such write was
// produced, dead-lettered, and answered an opaque 409 whose reason was only
// on chronicle.deadletter.
func TestWorkflowRefusalNamesTheReason(t *testing.T) {
	_, post, end := workflowAPI(t)
	if code, m := post("/v1/workflows/wf1/updates", `{"channel":"messages","update":"hello"}`); code != http.StatusOK {
		t.Fatalf("a good write: %d %v", code, m)
	}
	if code, m := post("/v1/workflows/wf1/decisions", `{"decision_id":"d1","kind":"agent","question":"q"}`); code != http.StatusOK {
		t.Fatalf("a decision: %d %v", code, m)
	}
	if code, m := post("/v1/workflows/wf1/decisions", `{"decision_id":"d2","kind":"human","question":"go on?","options":["yes","no"]}`); code != http.StatusOK {
		t.Fatalf("a decision with options: %d %v", code, m)
	}
	logged := end()
	for _, tc := range []struct {
		path, body, pointer string
		code                int
	}{
		{"/v1/workflows/wf1/updates", `{"channel":"context","update":null}`, "/update", http.StatusBadRequest},
		{"/v1/workflows/wf1/updates", `{"channel":"context","update":[1]}`, "/update", http.StatusBadRequest},
		{"/v1/workflows/wf1/checkpoints", `{"layer":1,"processed_commands":["nonexistent"]}`, "/processed_commands", http.StatusConflict},
		{"/v1/workflows/wf1/decisions", `{"decision_id":"d1","kind":"agent","question":"again"}`, "/decision_id", http.StatusConflict},
		{"/v1/workflows/wf1/decisions/d2", `{"answer":"maybe"}`, "/answer", http.StatusBadRequest},
		// left out: said so (it said `"" is not one of the options`)
		{"/v1/workflows/wf1/decisions/d2", `{}`, "/answer", http.StatusBadRequest},
	} {
		code, m := post(tc.path, tc.body)
		if code != tc.code || m["pointer"] != tc.pointer || m["reason"] == nil || m["reason"] == "" {
			t.Errorf("POST %s %s: %d %v; want %d naming %s with the reason", tc.path, tc.body, code, m, tc.code, tc.pointer)
		}
		if tc.body == `{}` && !strings.HasPrefix(fmt.Sprint(m["reason"]), "required") {
			t.Errorf("POST %s %s: reason %v, want it to say the answer is required", tc.path, tc.body, m["reason"])
		}
	}
	// completing a workflow that does not exist: 404, nothing written
	if code, m := post("/v1/workflows/never-started/complete", `{"outcome":"success"}`); code != http.StatusNotFound || !strings.Contains(fmt.Sprint(m["error"]), "never-started") {
		t.Errorf("complete of an unknown workflow: %d %v; want 404 naming it", code, m)
	}
	if got := end(); got != logged {
		t.Fatalf("refused writes reached the log: %d records, %d before", got, logged)
	}
	if code, m := post("/v1/workflows/wf1/decisions/d2", `{"answer":"yes"}`); code != http.StatusOK {
		t.Fatalf("an answer among the options: %d %v", code, m)
	}
	// a fork's updates are the forked event's update: its pointer names
	// the body's member, updates
	code, m := post("/v1/workflows/wf1/checkpoints", `{"layer":1}`)
	if code != http.StatusOK {
		t.Fatalf("a checkpoint: %d %v", code, m)
	}
	logged = end()
	fork := fmt.Sprintf(`{"workflow_id":"wf1-fork","checkpoint_id":%q,"updates":{"context":[1]}}`, m["checkpoint_id"])
	if code, m := post("/v1/workflows/wf1/fork", fork); code != http.StatusBadRequest || m["pointer"] != "/updates/context" || !strings.HasPrefix(fmt.Sprint(m["error"]), "updates/context: ") {
		t.Errorf("POST fork %s: %d %v; want 400 naming /updates/context", fork, code, m)
	}
	if got := end(); got != logged {
		t.Fatalf("a refused fork reached the log: %d records, %d before", got, logged)
	}
}

// TestWorkflowRouteTakesItsOwnFields: each workflow write route takes the
// fields openapi.json lists for it; another route's field is a 400 naming
// it (found by a reviewer of the description: all eight routes decoded
// one shared body, so an answer sent to /decisions was silently dropped).
// A replan's args.k out of 1–10 (0 included) is a 400 naming args.k as on
// /v1/workflows/suggest, and one beyond 64 bits names k and its range, not
// a Go decoding error (found by a new user's walkthrough).
func TestWorkflowRouteTakesItsOwnFields(t *testing.T) {
	_, post, end := workflowAPI(t)
	logged := end()
	for _, tc := range []struct{ path, body, field string }{
		{"/v1/workflows/wf9/decisions", `{"kind":"agent","question":"q","answer":"yes"}`, `"answer"`},
		{"/v1/workflows/wf9/updates", `{"channel":"messages","update":"x","outcome":"success"}`, `"outcome"`},
		{"/v1/workflows/wf9/commands", `{"command":"replan_dag","args":{"tools":["get_user_details"],"k":0}}`, "args.k"},
		{"/v1/workflows/wf9/commands", `{"command":"replan_dag","args":{"requirement":"book","k":11}}`, "args.k: 11"},
		{"/v1/workflows/wf9/commands", `{"command":"replan_dag","args":{"requirement":"book","k":-1}}`, "args.k: -1"},
		{"/v1/workflows/wf9/commands", `{"command":"replan_dag","args":{"requirement":"book","k":99999999999999999999}}`, `args: "k": got number 99999999999999999999, out of the range`},
	} {
		code, m := post(tc.path, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), tc.field) {
			t.Errorf("POST %s %s: %d %v; want 400 naming %s", tc.path, tc.body, code, m, tc.field)
		}
		// another route's field: its pointer and the reason too, as every
		// 400 of the route (it had neither: a walkthrough, 2026-11-30)
		if name := strings.Trim(tc.field, `"`); name != tc.field && (m["pointer"] != "/"+name || !strings.Contains(fmt.Sprint(m["reason"]), "not a field of")) {
			t.Errorf("POST %s %s: %v; want pointer /%s and the reason", tc.path, tc.body, m, name)
		}
	}
	// completing a workflow that does not exist: 404, nothing written
	if code, m := post("/v1/workflows/never-started/complete", `{"outcome":"success"}`); code != http.StatusNotFound || !strings.Contains(fmt.Sprint(m["error"]), "never-started") {
		t.Errorf("complete of an unknown workflow: %d %v; want 404 naming it", code, m)
	}
	if got := end(); got != logged {
		t.Fatalf("refused writes reached the log: %d records, %d before", got, logged)
	}
	if code, m := post("/v1/workflows/wf9/decisions", `{"kind":"agent","question":"q"}`); code != http.StatusOK {
		t.Fatalf("the route's own fields: %d %v", code, m)
	}
}

// A resume that names the later copy of a retried checkpoint (the retry's
// record, a duplicate the processor dropped) resumes from the first
// copy's checkpoint and names that one, as GET /v1/workflows/{id} and the
// checkpoint history do; it named the copy's position (a workflows
// walkthrough's finding).
func TestResumeFromACheckpointCopyNamesTheFirst(t *testing.T) {
	_, post, end := workflowAPI(t)
	if code, m := post("/v1/workflows/wcp/updates", `{"channel":"messages","update":"x"}`); code != http.StatusOK {
		t.Fatalf("update: %d %v", code, m)
	}
	cp := `{"event_id":"ckz","layer":0}`
	code, m := post("/v1/workflows/wcp/checkpoints", cp)
	if code != http.StatusOK {
		t.Fatalf("checkpoint: %d %v", code, m)
	}
	first := m["checkpoint_id"]
	if code, m := post("/v1/workflows/wcp/checkpoints", cp); code != http.StatusOK || m["checkpoint_id"] != first {
		t.Fatalf("the checkpoint's retry: %d %v; want 200 naming %v", code, m, first)
	}
	copyID := fmt.Sprintf("chronicle.workflows:0:%d", end()-1) // the retry's record, the log's last
	if copyID == first {
		t.Fatalf("the retry wrote no copy (the log ends at %s, the checkpoint's own record)", copyID)
	}
	code, m = post("/v1/workflows/wcp/resume", fmt.Sprintf(`{"checkpoint_id":%q}`, copyID))
	if code != http.StatusOK || m["checkpoint_id"] != first || m["next_layer"] != 1.0 {
		t.Fatalf("resume from the copy %s: %d %v; want 200 naming the first copy %v, next_layer 1", copyID, code, m, first)
	}
}
