package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// GET /v1/reasoning/{task} and /history serve the passes projection: the
// task's status and plan, the passes in order with their verdicts; an
// unknown task is 404, a bad id 400.
func TestReasoningRoutes(t *testing.T) {
	p, _, base := scopedServer(t)
	var evs []events.Envelope
	for n, conv := range []events.ConvergenceScores{{Completeness: 0.6, Coherence: 1, Consistency: 1}, {Converged: true, Completeness: 1, Coherence: 0.95, Consistency: 0.9}} {
		d := events.ReasoningPassData{TaskID: "q/7", Task: "Which year?", PassNumber: n + 1, Phase: "C", TTLRemaining: 2, Convergence: conv, Output: fmt.Sprint(2003 + n)}
		if n == 0 {
			d.Plan = &events.Plan{Steps: []events.PlanStep{{StepID: "answer", Description: "answer"}}}
		} else {
			parent, desc := "answer", "check the year"
			d.RefinementActions = []events.RefinementAction{{Type: "ADD", Target: "check", Changes: &events.StepChanges{ParentID: &parent, Description: &desc}}}
		}
		env, err := events.New(events.ReasoningPassCompleted, "test/reasoning-routes", fmt.Sprintf("p%d", n), time.Date(2026, 2, 3, 4, 5, n, 0, time.UTC), d)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		evs = append(evs, env)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", evs); code != 202 {
		t.Fatalf("post: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	id := url.PathEscape("q/7")
	code, task := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id, nil)
	if code != 200 || task["status"] != "converged" || task["passes"] != float64(2) || task["output"] != "2004" || task["converged_pass"] != float64(2) {
		t.Fatalf("task: %d %v", code, task)
	}
	code, h := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id+"/history", nil)
	passes, _ := h["passes"].([]any)
	if code != 200 || len(passes) != 2 {
		t.Fatalf("history: %d %v", code, h)
	}
	first := passes[0].(map[string]any)["convergence"].(map[string]any)
	if first["converged"] != false || fmt.Sprint(first["reason_codes"]) != "[COMPLETENESS_BELOW_0.95]" {
		t.Fatalf("pass 1 verdict %v", first)
	}
	plan := passes[1].(map[string]any)["plan"].(map[string]any)["steps"].([]any)
	if len(plan) != 2 || plan[1].(map[string]any)["step_id"] != "check" || plan[1].(map[string]any)["level"] != float64(2) {
		t.Fatalf("pass 2 plan %v", plan)
	}
	if code, _ := call(t, base, "tok-a", "GET", "/v1/reasoning/nope", nil); code != 404 {
		t.Fatalf("unknown task: %d", code)
	}
	if code, _ := call(t, base, "tok-a", "GET", "/v1/reasoning/%2Fbad", nil); code != 400 {
		t.Fatalf("bad id: %d", code)
	}
	// the session improvement route answers for an evaluated session
	envs, sid := sessionIn(t, 3, "project:a", "IMPROVE")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, imp := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/improvement", nil)
	if code != 200 || imp["session_id"] != sid || imp["evaluated"] != true || len(imp["chain"].([]any)) != 1 {
		t.Fatalf("improvement: %d %v", code, imp)
	}
	// the same through the stdio MCP tool's client, which (a writer of the
	// scope) starts the loop like POST …/improve; another scope's token
	// gets not found
	m, err := (&httpapi.Client{Base: base, Token: "tok-a"}).Improvement(context.Background(), mcpserver.Caller{}, sid, "")
	if err != nil || m["session_id"] != sid || imp["status"] != "AWAITING_CONTEXT" || m["status"] != "REVISION_READY" {
		t.Fatalf("client: %v %v (before: %v)", m, err, imp["status"])
	}
	if _, err := (&httpapi.Client{Base: base, Token: "tok-b"}).Improvement(context.Background(), mcpserver.Caller{}, sid, "project:a"); !errors.Is(err, search.ErrNotFound) {
		t.Fatalf("client as project:b: %v", err)
	}
}
