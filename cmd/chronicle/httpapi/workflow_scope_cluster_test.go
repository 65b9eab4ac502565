package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWorkflowWriteFindsItsScopeAcrossTheCluster: a workflow write
// without ?scope= by a token of two scopes (project:a, its default write
// scope, and project:b), sent to the member that does not hold the
// workflow (it lives in project:b, on a partition the other member owns),
// goes to that workflow, as one instance sends it: updates, a decision
// answer, a resume and a fork land in project:b's workflow. Before, the receiving
// member resolved the scope from its own store only, did not see the
// workflow, and the update started a second workflow of that id in
// project:a (the answer and the resume said 404). Also: the id in both
// scopes is a 409 naming them, in a scope the token only reads a 403, an
// id held nowhere starts a workflow in the default write scope, and a
// member that does not answer the scope question makes the write a 503
// naming it, with nothing written.
func TestWorkflowWriteFindsItsScopeAcrossTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	waitCluster(t, []*member{m1, m2})
	// ids whose project:b key only m2 owns
	ids := workflowIDsOn(t, m2, m1, "project:b", "wfb", 3)
	wf, wf2, wf3 := ids[0], ids[1], ids[2]
	post := func(m *member, token, path, body string) (int, map[string]any) {
		t.Helper()
		t0 := time.Now()
		code, b := postJSON(t, m.srv.URL, token, path, body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		if took := time.Since(t0); took > 4*time.Second && code == http.StatusOK {
			t.Errorf("POST %s to %s took %v", path, m.name, took)
		}
		if out == nil {
			out = map[string]any{"body": string(b)}
		}
		return code, out
	}
	state := func(out map[string]any) map[string]any {
		st, _ := out["state"].(map[string]any)
		return st
	}
	mustOK := func(m *member, token, path, body string) map[string]any {
		t.Helper()
		code, out := post(m, token, path, body)
		if code != http.StatusOK {
			t.Fatalf("POST %s to %s: %d %v", path, m.name, code, out)
		}
		return out
	}
	// the workflow, in project:b, with a checkpoint and a pending decision
	base := "/v1/workflows/" + wf
	mustOK(m2, "tok-ab", base+"/updates?scope=project:b", `{"channel":"messages","update":"first"}`)
	cpID, _ := mustOK(m2, "tok-ab", base+"/checkpoints?scope=project:b", `{"layer":0}`)["checkpoint_id"].(string)
	mustOK(m2, "tok-ab", base+"/decisions?scope=project:b", `{"decision_id":"d1","kind":"human","question":"go?","layer":1}`)

	// an update without ?scope= sent to m1: it lands in project:b's workflow
	out := mustOK(m1, "tok-ab", base+"/updates", `{"channel":"messages","update":"second"}`)
	st := state(out)
	if st["scope"] != "project:b" || fmt.Sprint(st["messages"]) != "[first second]" {
		t.Errorf("an update without ?scope= sent to m1 wrote to %v with messages %v; want project:b's workflow, [first second] (it started a second workflow of the id)", st["scope"], st["messages"])
	}
	if code, body, _ := fetch(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf+"?scope=project:a"); code != http.StatusNotFound {
		t.Errorf("a second %s in project:a: GET answered %d %s; want 404", wf, code, body)
	}
	// a decision answer without ?scope= sent to m1
	code, out := post(m1, "tok-ab", base+"/decisions/d1", `{"answer":"yes"}`)
	if st := state(out); code != http.StatusOK || st["scope"] != "project:b" || fmt.Sprint(st["pending_decisions"]) != "[]" {
		t.Errorf("the answer sent to m1: %d %v; want 200, project:b's workflow with no decision pending", code, out)
	}
	// a resume without ?scope= sent to m1 (from the last checkpoint, layer 0)
	code, out = post(m1, "tok-ab", base+"/resume", `{}`)
	if st := state(out); code != http.StatusOK || st["scope"] != "project:b" || out["next_layer"] != float64(1) {
		t.Fatalf("the resume sent to m1: %d %v; want 200, project:b's workflow, next_layer 1", code, out)
	}
	// GET from m1 (fan-out) reads the one workflow, resumed
	if code, body, _ := fetch(t, m1.srv.URL, "tok-ab", base); code != http.StatusOK || !strings.Contains(string(body), `"project:b"`) {
		t.Fatalf("GET %s on m1: %d %s", base, code, body)
	}

	// a fork without ?scope= sent to m1: from project:b's workflow, into project:b
	out = mustOK(m1, "tok-ab", base+"/fork", fmt.Sprintf(`{"checkpoint_id":%q,"workflow_id":%q}`, cpID, wf+"-fork"))
	if st := state(out); st["scope"] != "project:b" || st["workflow_id"] != wf+"-fork" {
		t.Fatalf("the fork sent to m1: %v; want %s-fork in project:b", out, wf)
	}

	// in a scope the token reads but may not write: 403, nothing written
	if code, out := post(m1, "tok-ab-ro", base+"/updates", `{"channel":"messages","update":"ro"}`); code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "project:b") {
		t.Fatalf("a write to project:b's workflow by a token that only reads project:b: %d %v; want 403 naming project:b", code, out)
	}
	// an id held nowhere: a new workflow in the default write scope
	fresh := "/v1/workflows/" + wf2
	if st := state(mustOK(m1, "tok-ab", fresh+"/updates", `{"channel":"messages","update":"new"}`)); st["scope"] != "project:a" {
		t.Fatalf("a new workflow without ?scope=: in %v; want project:a, the default write scope", st["scope"])
	}
	// the id in both scopes (project:b's on m2): 409 naming them, from either member
	mustOK(m2, "tok-ab", fresh+"/updates?scope=project:b", `{"channel":"messages","update":"b"}`)
	for _, m := range []*member{m1, m2} {
		code, out := post(m, "tok-ab", fresh+"/updates", `{"channel":"messages","update":"which?"}`)
		if e := fmt.Sprint(out["error"]); code != http.StatusConflict || !strings.Contains(e, "project:a") || !strings.Contains(e, "project:b") {
			t.Fatalf("a write to an id in both scopes sent to %s: %d %v; want 409 naming project:a and project:b", m.name, code, out)
		}
	}

	// m2 stops answering: a write sent to m1 that must ask it is a 503
	// naming it within the bound (1 s here), and nothing is written
	mustOK(m2, "tok-ab", "/v1/workflows/"+wf3+"/updates?scope=project:b", `{"channel":"messages","update":"x"}`)
	h2 := *m2.h.Load().(*http.Handler)
	m2.swap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t0 := time.Now()
	code, out = post(m1, "tok-ab", "/v1/workflows/"+wf3+"/updates", `{"channel":"messages","update":"lost?"}`)
	took := time.Since(t0)
	m2.swap(h2)
	if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(out["error"]), m2.api.Advertise) || took > 4*time.Second {
		t.Fatalf("a write whose scope a silent member may hold: %d %v after %v; want 503 naming %s within the bound", code, out, took, m2.api.Advertise)
	}
	if code, body, _ := fetch(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf3+"?scope=project:a"); code != http.StatusNotFound {
		t.Fatalf("the refused write started %s in project:a: %d %s", wf3, code, body)
	}
}
