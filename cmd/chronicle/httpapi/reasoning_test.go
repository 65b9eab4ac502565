package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
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
	if h["next_cursor"] != "" {
		t.Fatalf("history's one page: next_cursor %v, want empty", h["next_cursor"])
	}
	// paged: limit, the cursor of the previous page, and the byte bound
	// with or without limit (before, limit was ignored and a walkthrough's
	// 20 passes came as one 19 MB body)
	code, h1 := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id+"/history?limit=1", nil)
	if p1, _ := h1["passes"].([]any); code != 200 || len(p1) != 1 || p1[0].(map[string]any)["pass_number"] != float64(1) || h1["next_cursor"] != "1" {
		t.Fatalf("history?limit=1: %d %v", code, h1)
	}
	code, h2 := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id+"/history?limit=1&cursor=1", nil)
	if p2, _ := h2["passes"].([]any); code != 200 || len(p2) != 1 || p2[0].(map[string]any)["pass_number"] != float64(2) || h2["next_cursor"] != "" {
		t.Fatalf("history?limit=1&cursor=1: %d %v", code, h2)
	}
	defer func(n int) { httpapi.HistoryPageBytes = n }(httpapi.HistoryPageBytes)
	httpapi.HistoryPageBytes = 10 // each pass is larger: one a page
	code, hb := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id+"/history", nil)
	if pb, _ := hb["passes"].([]any); code != 200 || len(pb) != 1 || hb["next_cursor"] != "1" {
		t.Fatalf("history within 10 bytes: %d %v; want one pass and a next_cursor", code, hb)
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "cursor=0", "cursor=01", "cursor=abc"} {
		code, m := call(t, base, "tok-a", "GET", "/v1/reasoning/"+id+"/history?"+q, nil)
		if name := q[:strings.IndexByte(q, '=')]; code != 400 || !strings.HasPrefix(fmt.Sprint(m["error"]), name+": ") {
			t.Errorf("history?%s: %d %v; want a 400 naming %s", q, code, m, name)
		}
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
	m, err := (&httpapi.Client{Base: base, Token: "tok-a"}).Improvement(context.Background(), sid, "")
	if err != nil || m["session_id"] != sid || imp["status"] != "AWAITING_CONTEXT" || m["status"] != "REVISION_READY" {
		t.Fatalf("client: %v %v (before: %v)", m, err, imp["status"])
	}
	if _, err := (&httpapi.Client{Base: base, Token: "tok-b"}).Improvement(context.Background(), sid, "project:a"); !errors.Is(err, search.ErrNotFound) {
		t.Fatalf("client as project:b: %v", err)
	}
}

// GET /v1/reasoning lists the tasks of the scopes the caller reads, in key
// order, paged by next_cursor, without their outputs; another scope's
// tasks are never listed, and one scope the token does not read is a 403.
// Before, there was no list: a task recorded without a session could be
// found only by its id (a walkthrough, 2026-12-01).
func TestReasoningTasksAreListed(t *testing.T) {
	p, _, base := scopedServer(t)
	post := func(tok, scope, task string) {
		t.Helper()
		d := events.ReasoningPassData{TaskID: task, PassNumber: 1, Phase: "C", Convergence: events.ConvergenceScores{Completeness: 0.5, Coherence: 1, Consistency: 1}, Output: "a long answer"}
		env, err := events.New(events.ReasoningPassCompleted, "test/reasoning-list", scope+task, time.Date(2026, 2, 3, 4, 5, 0, 0, time.UTC), d)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		if code, m := call(t, base, tok, "POST", "/v1/events", []events.Envelope{env}); code != 202 {
			t.Fatalf("post %s %s: %d %v", scope, task, code, m)
		}
	}
	post("tok-a", "project:a", "t2")
	post("tok-a", "project:a", "t1")
	post("tok-b", "project:b", "t0")
	waitCaughtUp(t, p)
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		code, m := call(t, base, "tok-a", "GET", "/v1/reasoning?limit=1&cursor="+url.QueryEscape(cursor), nil)
		tasks, _ := m["tasks"].([]any)
		if code != 200 || len(tasks) != 1 || i > 2 {
			t.Fatalf("page %d: %d %v", i, code, m)
		}
		task := tasks[0].(map[string]any)
		if _, has := task["output"]; has || task["passes"] != float64(1) || task["status"] == "" {
			t.Fatalf("a listed task %v: want its summary without the output", task)
		}
		got = append(got, fmt.Sprint(task["scope"], "/", task["id"]))
		if cursor, _ = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if fmt.Sprint(got) != "[project:a/t1 project:a/t2]" {
		t.Fatalf("tok-a's tasks %v; want project:a's two, in id order", got)
	}
	if code, m := call(t, base, "tok-admin", "GET", "/v1/reasoning", nil); code != 200 || len(m["tasks"].([]any)) != 3 {
		t.Fatalf("admin's list: %d %v; want all three", code, m)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/reasoning?scope=project:b", nil); code != 403 {
		t.Fatalf("tok-a, ?scope=project:b: %d %v; want 403", code, m)
	}
	for _, q := range []string{"cursor=nope", "cursor=project:a/", "limit=0"} {
		if code, m := call(t, base, "tok-a", "GET", "/v1/reasoning?"+q, nil); code != 400 || !strings.HasPrefix(fmt.Sprint(m["error"]), q[:strings.IndexByte(q, '=')]+": ") {
			t.Errorf("?%s: %d %v; want a 400 naming the parameter", q, code, m)
		}
	}
}
