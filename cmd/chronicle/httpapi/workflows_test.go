package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/toolsearch"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
	"net/http/httptest"
)

// startAt starts a pipeline on dir with an API in front and a workflow
// client of it; stop closes both (a restart starts again on dir).
func startAt(t *testing.T, dir string) (p *pipeline.Pipeline, c *client.Client, stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			_ = p.Close()
		}
	}
	t.Cleanup(stop)
	return p, client.New(srv.URL, ""), stop
}

// musts are the workflow client's calls that must succeed.
type musts struct {
	t *testing.T
	c *client.Client
}

func (m musts) w(r workflows.WriteResult, err error) workflows.WriteResult {
	m.t.Helper()
	if err != nil {
		m.t.Fatal(err)
	}
	return r
}

func (m musts) state(id string) workflows.View {
	m.t.Helper()
	v, err := m.c.State(context.Background(), id)
	if err != nil {
		m.t.Fatal(err)
	}
	return v
}

func taskIDsOf(t *testing.T, s workflows.State) []string {
	t.Helper()
	var out []string
	for _, raw := range s.Tasks {
		var x struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x.ID)
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every checkpoint's state equals what `chronicle replay --until
// <checkpoint id>` rebuilds (processors.Replay, the command's code, into a
// fresh store), and GET .../checkpoints/{id} answers the same state; an
// interleaved second workflow changes nothing of it.
func TestWorkflowCheckpointIsReplayUntil(t *testing.T) {
	p, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	const wf = "book/w-1" // an id with '/': percent-encoded in URLs
	var ids []string
	for layer := 0; layer < 3; layer++ {
		m.w(c.Update(ctx, wf, layer, events.ChannelTasks, []map[string]any{{"id": "t" + string(rune('a'+layer)), "tool": "get_user_details"}}))
		m.w(c.Update(ctx, wf, layer, events.ChannelContext, map[string]any{"layer": layer, "user": "mia_li_3668"}))
		m.w(c.Update(ctx, "other", layer, events.ChannelMessages, "noise"))
		if layer == 1 {
			m.w(c.Enqueue(ctx, wf, events.CommandReplanDAG, map[string]any{"tools": []string{"get_user_details"}}, "agent"))
			m.w(c.Interrupt(ctx, wf, events.DecisionAgent, "layer 1 done: continue or replan?"))
		}
		cp := m.w(c.Checkpoint(ctx, wf, layer))
		ids = append(ids, cp.CheckpointID)
		m.w(c.Update(ctx, wf, layer, events.ChannelMessages, map[string]any{"role": "tool", "content": "after checkpoint"}))
	}
	hist := func() []workflows.HistoryEntry {
		h, err := c.History(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}()
	if len(hist) != 3 {
		t.Fatalf("history: %d checkpoints, want 3", len(hist))
	}
	view := m.state(wf)
	if view.CheckpointID != ids[2] || view.Checkpoints != 3 {
		t.Fatalf("state names checkpoint %q (%d saved), want %q", view.CheckpointID, view.Checkpoints, ids[2])
	}
	for i, h := range hist {
		if h.CheckpointID != ids[i] || h.Layer != i {
			t.Fatalf("history[%d] = %s layer %d, the checkpoint write answered %s", i, h.CheckpointID, h.Layer, ids[i])
		}
		at := func() workflows.HistoryEntry {
			h, err := c.StateAt(ctx, wf, h.CheckpointID)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}()
		pos, err := workflows.ParseCheckpointID(h.CheckpointID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := projections.Open(filepath.Join(t.TempDir(), "replay"), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: st, Processors: pipeline.DefaultProcessors(), Until: processors.Until{Pos: &pos}}); err != nil {
			t.Fatal(err)
		}
		replayed, ok, err := workflows.Get(st, events.EntityKey(events.DefaultScope, wf))
		st.Close()
		if err != nil || !ok {
			t.Fatalf("replay --until %s: no workflow (%v)", h.CheckpointID, err)
		}
		if a, b := jsonOf(t, replayed), jsonOf(t, at.State); a != b {
			t.Fatalf("checkpoint %s:\nreplay --until %s\ncheckpoint     %s", h.CheckpointID, a, b)
		}
		if len(replayed.Tasks) != i+1 || len(replayed.Messages) != i {
			t.Fatalf("checkpoint %d holds %d tasks, %d messages", i, len(replayed.Tasks), len(replayed.Messages))
		}
	}
	if len(view.Messages) != 3 || view.Status != workflows.StatusWaitingForAgent || len(view.PendingCommands) != 1 {
		t.Fatalf("current state: %s", jsonOf(t, view))
	}
	// a fork from checkpoint 0 with an update; the parent stays
	f := m.w(c.Fork(ctx, wf, ids[0], "book/w-1-fork", map[string]any{"context": map[string]any{"user": "sophia_silva_7557"}}))
	if got := taskIDsOf(t, f.State.State); !reflect.DeepEqual(got, []string{"ta"}) || string(f.State.Context["user"]) != `"sophia_silva_7557"` || f.State.Parent.CheckpointID != ids[0] {
		t.Fatalf("fork: %s", jsonOf(t, f.State))
	}
	if v := m.state(wf); string(v.Context["user"]) != `"mia_li_3668"` || v.Events != view.Events {
		t.Fatalf("the fork changed its parent: %s", jsonOf(t, v))
	}
	// a whole replay rebuilds the live workflows projection bit for bit
	live, rebuilt := liveAndReplayed(t, p)
	if live[workflows.Name] == "" || live[workflows.Name] != rebuilt[workflows.Name] {
		t.Fatalf("workflows projection: live %q, replayed %q", live[workflows.Name], rebuilt[workflows.Name])
	}
	var ae *client.Error
	if _, err := c.StateAt(ctx, wf, "chronicle.workflows:0:999999"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("a checkpoint id past the log: %v", err)
	}
	if _, err := c.Update(ctx, wf, 0, "inbox", 1); !errors.As(err, &ae) || ae.Status != 400 || ae.Pointer != "/channel" {
		t.Fatalf("an unknown channel: %v", err)
	}
}

// A human decision pauses the workflow and the pause survives a restart of
// the service; the answer after it resumes the workflow. Then the
// executor "crashes" during layer 1 (one of its two tasks recorded, the
// service restarted): resuming from the last checkpoint and running layer
// 1 again records every task exactly once.
func TestHILPauseAndCrashResumeSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, c, stop := startAt(t, dir)
	m := musts{t, c}
	m.w(c.Update(ctx, "w", 0, events.ChannelTasks, []map[string]any{{"id": "t1"}, {"id": "t2"}}))
	cp0 := m.w(c.Checkpoint(ctx, "w", 0))
	d := m.w(c.Interrupt(ctx, "w", events.DecisionHuman, "Cancel reservation ABC123?", "approve", "reject"))
	if d.State.Status != workflows.StatusWaitingForHuman {
		t.Fatalf("after the interrupt: %s", d.State.Status)
	}
	stop()

	_, c, stop = startAt(t, dir)
	m = musts{t, c}
	v := m.state("w")
	if v.Status != workflows.StatusWaitingForHuman || len(v.PendingDecisions) != 1 || v.PendingDecisions[0].DecisionID != d.EventID || v.CheckpointID != cp0.CheckpointID {
		t.Fatalf("after a restart: %s", jsonOf(t, v))
	}
	a := m.w(c.Answer(ctx, "w", d.EventID, "approve", "human:ana"))
	if a.State.Status != workflows.StatusRunning || len(a.State.Decisions) != 1 {
		t.Fatalf("after the answer: %s", jsonOf(t, a.State))
	}
	cp1 := m.w(c.Checkpoint(ctx, "w", 0)) // the decision is part of layer 0's state
	m.w(c.Update(ctx, "w", 1, events.ChannelTasks, map[string]any{"id": "t3"}))
	stop() // crash during layer 1: t4 never ran

	_, c, _ = startAt(t, dir)
	m = musts{t, c}
	r := m.w(c.Resume(ctx, "w", ""))
	if r.CheckpointID != cp1.CheckpointID || r.NextLayer == nil || *r.NextLayer != 1 {
		t.Fatalf("resume: from %s, next layer %v; want %s, 1", r.CheckpointID, r.NextLayer, cp1.CheckpointID)
	}
	if got := taskIDsOf(t, r.State.State); !reflect.DeepEqual(got, []string{"t1", "t2"}) || len(r.State.Decisions) != 1 {
		t.Fatalf("state after resume: tasks %v, decisions %d", got, len(r.State.Decisions))
	}
	m.w(c.Update(ctx, "w", 1, events.ChannelTasks, []map[string]any{{"id": "t3"}, {"id": "t4"}}))
	m.w(c.Checkpoint(ctx, "w", 1))
	done := m.w(c.Complete(ctx, "w", "success", map[string]any{"cancelled": "ABC123"}))
	if got := taskIDsOf(t, done.State.State); !reflect.DeepEqual(got, []string{"t1", "t2", "t3", "t4"}) || done.State.Status != workflows.StatusCompleted {
		t.Fatalf("tasks at the end: %v (each once), status %s", got, done.State.Status)
	}
	var ae *client.Error
	if _, err := c.Update(ctx, "w", 2, events.ChannelTasks, 1); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("an update after completion: %v", err)
	}
}

// A resume without checkpoint_id goes back to the checkpoint the state
// stands on, the one GET names: after a rewind to an earlier checkpoint
// that is the earlier one. Before, it went to the last saved one, so an
// executor that crashed after a deliberate rewind and resumed as
// documented jumped forward to the state it had rewound away from, while
// the state named the earlier checkpoint (a workflows walkthrough,
// 2026-12-06).
func TestDefaultResumeIsTheStatesCheckpoint(t *testing.T) {
	ctx := context.Background()
	_, c, _ := startAt(t, t.TempDir())
	m := musts{t, c}
	m.w(c.Update(ctx, "rw", 0, events.ChannelTasks, map[string]any{"id": "a"}))
	cpA := m.w(c.Checkpoint(ctx, "rw", 0))
	m.w(c.Update(ctx, "rw", 1, events.ChannelTasks, map[string]any{"id": "b"}))
	cpB := m.w(c.Checkpoint(ctx, "rw", 1))
	if r := m.w(c.Resume(ctx, "rw", cpA.CheckpointID)); r.CheckpointID != cpA.CheckpointID {
		t.Fatalf("the rewind: to %s, want %s", r.CheckpointID, cpA.CheckpointID)
	}
	if v := m.state("rw"); v.CheckpointID != cpA.CheckpointID {
		t.Fatalf("the state after the rewind names %s, want %s", v.CheckpointID, cpA.CheckpointID)
	}
	// a write's answer names the state's checkpoint as GET does (it had
	// none in its state)
	if u := m.w(c.Update(ctx, "rw", 1, events.ChannelTasks, map[string]any{"id": "c"})); u.State.CheckpointID != cpA.CheckpointID { // the crash: layer 1 half run
		t.Fatalf("an update's answer: state checkpoint_id %q, want %q", u.State.CheckpointID, cpA.CheckpointID)
	}
	r := m.w(c.Resume(ctx, "rw", ""))
	if r.CheckpointID != cpA.CheckpointID || r.NextLayer == nil || *r.NextLayer != 1 {
		t.Fatalf("the default resume: to %s (next layer %v), want %s, the state's, not the last saved %s", r.CheckpointID, r.NextLayer, cpA.CheckpointID, cpB.CheckpointID)
	}
	if got := taskIDsOf(t, r.State.State); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("tasks after the default resume: %v, want [a]", got)
	}
	// a checkpoint saved after the rewind is the state's, and the last
	m.w(c.Update(ctx, "rw", 1, events.ChannelTasks, map[string]any{"id": "d"}))
	cpC := m.w(c.Checkpoint(ctx, "rw", 1))
	if r := m.w(c.Resume(ctx, "rw", "")); r.CheckpointID != cpC.CheckpointID {
		t.Fatalf("the default resume after a new checkpoint: to %s, want %s", r.CheckpointID, cpC.CheckpointID)
	}
}

// POST /v1/dags: layers for catalogue tools and declared ones, the cycle
// named with 422, an unknown tool named with 400.
func TestPostDAG(t *testing.T) {
	_, srv := setup(t)
	code, m := call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []any{
		"cancel_reservation", "think",
		map[string]any{"name": "find_reservation", "parameters": map[string]any{"type": "object", "properties": map[string]any{"email": map[string]any{"type": "string"}}},
			"output": map[string]any{"type": "object", "properties": map[string]any{"reservation_id": map[string]any{"type": "string"}}}},
	}})
	if code != 200 || fmt.Sprint(m["layers"]) != "[[find_reservation think] [cancel_reservation]]" {
		t.Fatalf("%d %v", code, m)
	}
	code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []string{"cancel_reservation", "get_reservation_details"}})
	if code != 422 || fmt.Sprint(m["cycle"]) != "[cancel_reservation get_reservation_details cancel_reservation]" {
		t.Fatalf("cycle: %d %v", code, m)
	}
	// a cycle skip_echo breaks says so, and skip_echo builds it (the 422
	// gave no way out: a workflows walkthrough, 2026-12-06)
	code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []string{"get_user_details", "book_reservation"}})
	if code != 422 || !strings.Contains(fmt.Sprint(m["error"]), `with "skip_echo": true`) {
		t.Fatalf("a cycle skip_echo breaks: %d %v, want the 422 to say so", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []string{"get_user_details", "book_reservation"}, "skip_echo": true}); code != 200 {
		t.Fatalf("the same with skip_echo: %d %v", code, m)
	}
	// a real cycle (a gives y for b's y, b gives x for a's x) has no hint
	obj := func(p string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{p: map[string]any{"type": "string"}}}
	}
	loop := []any{map[string]any{"name": "a", "parameters": obj("x"), "output": obj("y")}, map[string]any{"name": "b", "parameters": obj("y"), "output": obj("x")}}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": loop}); code != 422 || strings.Contains(fmt.Sprint(m["error"]), "skip_echo") {
		t.Fatalf("a cycle skip_echo keeps: %d %v, want a 422 without the hint", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []string{"launch_rocket"}}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), `"launch_rocket"`) {
		t.Fatalf("unknown tool: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []string{"think"}, "rule": "fuzzy"}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "rule") {
		t.Fatalf("bad rule: %d %v", code, m)
	}
	// at most MaxDAGTools per request: 256 declared tools, each feeding
	// the next, are ordered; 257 are a 400 naming tools (10,000 held a
	// core for 26 s: a walkthrough)
	chain := func(n int) []any {
		var tools []any
		for i := range n {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("t%d", i),
				"parameters": map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("k%d", i): map[string]any{"type": "string"}}},
				"output":     map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("k%d", i+1): map[string]any{"type": "string"}}}})
		}
		return tools
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": chain(httpapi.MaxDAGTools)}); code != 200 || len(m["layers"].([]any)) != httpapi.MaxDAGTools {
		t.Fatalf("a chain of %d tools: %d, %d layers", httpapi.MaxDAGTools, code, len(fmt.Sprint(m["layers"])))
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": chain(httpapi.MaxDAGTools + 1)}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "tools: 257 tools, at most 256") {
		t.Fatalf("%d tools: %d %v", httpapi.MaxDAGTools+1, code, m)
	}
	// a bad declared tool: the member and the reason, never "(<nil>)" or a
	// Go type (found by a new user's walkthrough)
	for _, c := range []struct {
		tool any
		want string
	}{
		{map[string]any{}, "tools[0].name: required"},
		{map[string]any{"name": ""}, "tools[0].name: required"},
		{map[string]any{"name": "a", "parameters": "str"}, "tools[0].parameters: a JSON Schema object, got string"},
		{map[string]any{"name": "a", "outputs": map[string]any{}}, `tools[0]: unknown member "outputs"`},
		{nil, "tools[0]: a tool name or an object {name, parameters, output}, got null"},
		{"", "tools[0]: an empty tool name"},
	} {
		code, m := call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": []any{c.tool}})
		if e := fmt.Sprint(m["error"]); code != 400 || !strings.Contains(e, c.want) || strings.Contains(e, "<nil>") {
			t.Fatalf("tool %v: %d %q; want 400 saying %q", c.tool, code, e, c.want)
		}
	}
	// a tool named twice — two declarations, or a catalogue name and a
	// declaration — is a 400 naming both positions: the later one replaced
	// the earlier's schemas silently, and so the edges (a walkthrough)
	decl := func(prop string) map[string]any {
		return map[string]any{"name": "b", "parameters": map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{}}}}
	}
	for _, c := range []struct {
		tools []any
		want  string
	}{
		{[]any{"think", decl("zz"), decl("qq")}, `tools[2]: tool "b" is named twice (at /tools/1 and here)`},
		{[]any{"get_user_details", map[string]any{"name": "get_user_details", "parameters": map[string]any{"type": "object"}}}, `tools[1]: tool "get_user_details" is named twice (at /tools/0 and here)`},
		{[]any{"think", "think"}, `tools[1]: tool "think" is named twice`},
	} {
		code, m := call(t, srv.URL, "", "POST", "/v1/dags", map[string]any{"tools": c.tools})
		if e := fmt.Sprint(m["error"]); code != 400 || !strings.Contains(e, c.want) || strings.Contains(e, "<nil>") {
			t.Fatalf("tools %v: %d %q; want 400 saying %q", c.tools, code, e, c.want)
		}
	}
}

// POST /v1/workflows/suggest on a fresh service (no tool graph yet): the
// picks come from meaning alone, no edge supports them, so the agent must
// choose; bad input names the field.
func TestPostSuggest(t *testing.T) {
	_, srv := setup(t)
	code, m := call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "I want to cancel my reservation", "k": 2})
	sg, _ := m["suggestion"].(map[string]any)
	if code != 200 || sg["mode"] != "explicit_required" || len(sg["tools"].([]any)) != 2 || sg["confidence"].(float64) != 0 || sg["speculation_threshold"].(float64) != 0.92 {
		t.Fatalf("%d %v", code, m)
	}
	// every answer has an id of its own for the feedback route, which
	// counts one verdict per suggestion_id (found by an analyst's
	// walkthrough: clients had to make one up)
	first, _ := m["suggestion_id"].(string)
	_, again := call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "I want to cancel my reservation", "k": 2})
	if !strings.HasPrefix(first, "sg-") || again["suggestion_id"] == first || again["suggestion_id"] == nil {
		t.Fatalf("suggestion ids %q and %v; want two different sg-<uuid>", first, again["suggestion_id"])
	}
	// k sent as 0 is out of range (left out, it is the default 3)
	if code, m := call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel", "k": 0}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "k: 0") {
		t.Fatalf("k 0: %d %v; want 400 naming k", code, m)
	}
	// a malformed ?scope= and a truncated body have a reason too, as the
	// route's other 400s (they were {error} alone: a walkthrough)
	if code, m := call(t, srv.URL, "", "POST", "/v1/workflows/suggest?scope=bogus", map[string]any{"intent": "cancel"}); code != 400 || !strings.HasPrefix(fmt.Sprint(m["error"]), "scope: ") || m["reason"] == nil {
		t.Fatalf("?scope=bogus: %d %v; want 400 naming scope, with a reason", code, m)
	}
	resp, err := http.Post(srv.URL+"/v1/workflows/suggest", "application/json", strings.NewReader(`{"intent":"cancel"`))
	if err != nil {
		t.Fatal(err)
	}
	var trunc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&trunc)
	resp.Body.Close()
	if resp.StatusCode != 400 || trunc["pointer"] != "/" || !strings.Contains(fmt.Sprint(trunc["reason"]), "ends before its value is complete") {
		t.Fatalf("a truncated body: %d %v; want 400 with pointer / and the reason", resp.StatusCode, trunc)
	}
	if code, m := call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel"}); code != 200 || len(m["suggestion"].(map[string]any)["tools"].([]any)) != 3 {
		t.Fatalf("k left out: %d %v; want the default 3 tools", code, m)
	}
	// feedback reaches the policy's projection
	code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback?scope=project:a", map[string]any{"accepted": false, "mode": "speculative_execution", "confidence": 0.93})
	if code != 200 || m["feedbacks"].(float64) != 1 || m["window"] != "R" || m["threshold"].(float64) != 0.92 {
		t.Fatalf("feedback: %d %v", code, m)
	}
	// one verdict per suggestion_id: a retry counts once, another verdict
	// is a 409 naming the field, and nothing more is counted
	one := map[string]any{"suggestion_id": "s-1", "accepted": true, "mode": "suggestion", "confidence": 0.93}
	for i := range 2 {
		if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback?scope=project:a", one); code != 200 || m["feedbacks"].(float64) != 2 {
			t.Fatalf("feedback for s-1, sent %d times: %d %v", i+1, code, m)
		}
	}
	one["accepted"] = false
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback?scope=project:a", one); code != 409 || m["pointer"] != "/suggestion_id" || m["index"] != nil {
		t.Fatalf("another verdict for s-1: %d %v (want 409 naming /suggestion_id, without POST /v1/events' index)", code, m)
	}
	// the same verdict with another mode: refused too, and the reason says
	// which values count (it said "another verdict": a walkthrough)
	one["accepted"], one["mode"] = true, "speculative_execution"
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback?scope=project:a", one); code != 409 || !strings.Contains(fmt.Sprint(m["reason"]), "accepted, mode or confidence") {
		t.Fatalf("another mode for s-1: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback?scope=project:a", map[string]any{"accepted": true, "mode": "suggestion", "confidence": 0.93}); code != 200 || m["feedbacks"].(float64) != 3 {
		t.Fatalf("a feedback after the refused verdict: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback", map[string]any{"accepted": true, "mode": "guess", "confidence": 0.93}); code != 400 || m["pointer"] != "/mode" {
		t.Fatalf("bad mode: %d %v", code, m)
	}
	// missing members: every one said, the first one's pointer (it had no
	// pointer: a README-claims walkthrough)
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback", map[string]any{"policy": "default", "accepted": true, "mode": "suggestion"}); code != 400 || m["pointer"] != "/confidence" || !strings.HasPrefix(fmt.Sprint(m["reason"]), "required") {
		t.Fatalf("no confidence: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest/feedback", map[string]any{"policy": "default"}); code != 400 || m["pointer"] != "/accepted" || !strings.Contains(fmt.Sprint(m["error"]), "mode: required") {
		t.Fatalf("three members missing: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"k": 2}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "intent") {
		t.Fatalf("no intent: %d %v", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel", "estimates": map[string]any{"cancel_reservation": map[string]any{"cost_usd": -0.5}}}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "estimates.cancel_reservation.cost_usd") {
		t.Fatalf("a negative cost estimate: %d %v", code, m)
	}
	code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "I want to cancel my reservation", "k": 1, "estimates": map[string]any{"get_reservation_details": map[string]any{"cost_usd": 0.01, "seconds": 0.5}}})
	if sg, _ := m["suggestion"].(map[string]any); code != 200 || sg["estimate"] == nil {
		t.Fatalf("estimates: %d %v", code, m)
	}
	// a context tool nobody knows is a 400 naming it, as a replan's
	// args.tools is (it was ignored: 200)
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel", "context_tools": []string{"get_user_details", "nope"}}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), `context_tools[1]: "nope"`) {
		t.Fatalf("an unknown context tool: %d %v; want 400 naming context_tools[1]", code, m)
	}
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel", "context_tools": []string{"get_user_details"}}); code != 200 {
		t.Fatalf("a known context tool: %d %v", code, m)
	}
	// and so is an estimate of a tool nobody knows (it was accepted)
	if code, m = call(t, srv.URL, "", "POST", "/v1/workflows/suggest", map[string]any{"intent": "cancel", "estimates": map[string]any{"get_user_details": map[string]any{"cost_usd": 0.01}, "nope": map[string]any{"cost_usd": 1}}}); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), `estimates.nope: "nope"`) {
		t.Fatalf("an estimate of an unknown tool: %d %v; want 400 naming estimates.nope", code, m)
	}
}

// GET /v1/tools/search with context_tools: hits re-ranked by
// α·semantic + (1 − α)·graph, α below 1 for a well-observed context tool.
func TestToolSearchGraphTerm(t *testing.T) {
	p, srv := setup(t)
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var all []events.Envelope
	for _, r := range recs[:20] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, envs...)
	}
	if code, m := call(t, srv.URL, "", "POST", "/v1/events", all); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	waitCaughtUp(t, p)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m := call(t, srv.URL, "", "GET", "/v1/tools/search?query=reservation&limit=10", nil)
		if ts, _ := m["tools"].([]any); len(ts) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool collection did not fill")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// an empty name is a 400 naming its position, as graph/next's after=
	// (it was skipped, so the next unknown name's position was off by one)
	if code, m := call(t, srv.URL, "", "GET", "/v1/tools/search?query=reservation&limit=3&context_tools=get_user_details,,x", nil); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "position 1") {
		t.Fatalf("context_tools with an empty name: %d %v, want a 400 naming position 1", code, m)
	}
	code, m := call(t, srv.URL, "", "GET", "/v1/tools/search?query=reservation&limit=3&context_tools=get_user_details", nil)
	alpha, _ := m["alpha"].(float64)
	hits, _ := m["tools"].([]any)
	if code != 200 || alpha < 0.5 || alpha >= 1 || len(hits) != 3 {
		t.Fatalf("%d alpha %v, %d hits: %v", code, alpha, len(hits), m)
	}
	prev := 2.0
	for _, h := range hits {
		h := h.(map[string]any)
		rel, sem, gr := h["relevance"].(float64), h["semantic"].(float64), h["graph"].(float64)
		if math.Abs(rel-(alpha*sem+(1-alpha)*gr)) > 1e-9 || rel > prev {
			t.Fatalf("hit %v: relevance %v ≠ %v·%v + (1−%v)·%v, or out of order", h["id"], rel, alpha, sem, alpha, gr)
		}
		prev = rel
	}
	// the route answers what toolsearch.Search (the function chronicle
	// eval measures) computes on the same graph and search
	g, err := toolgraph.Load(p.Store)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctxTools := range [][]string{{"get_user_details"}, {"get_user_details", "get_reservation_details"}} {
		code, m := call(t, srv.URL, "", "GET", "/v1/tools/search?query=change+my+flight&limit=4&context_tools="+strings.Join(ctxTools, ","), nil)
		want, err := toolsearch.Search(context.Background(), 4, toolsearch.GraphTermOf(g, ctxTools), toolsearch.Options{},
			func(ctx context.Context, limit int) ([]toolsearch.Candidate, error) {
				res, err := p.Search.Search(ctx, search.Query{Text: "change my flight", Limit: limit, Collection: search.Tools})
				var out []toolsearch.Candidate
				for _, h := range res.Memories {
					out = append(out, toolsearch.Candidate{Tool: h.ID, Semantic: h.Relevance})
				}
				return out, err
			})
		if err != nil {
			t.Fatal(err)
		}
		hits, _ := m["tools"].([]any)
		if code != 200 || len(hits) != len(want.Tools) || m["alpha"] != want.Alpha || m["candidates"] != float64(want.Candidates) {
			t.Fatalf("context %v: route %d %v, shared function %+v", ctxTools, code, m, want)
		}
		for i, h := range hits {
			h := h.(map[string]any)
			if w := want.Tools[i]; h["id"] != w.Tool || h["relevance"] != w.Score || h["semantic"] != w.Semantic || h["graph"] != w.Graph {
				t.Fatalf("context %v, hit %d: route %v, shared function %+v", ctxTools, i, h, w)
			}
		}
	}
	if code, _ := call(t, srv.URL, "", "GET", "/v1/tools/search?query=x&limit=50&context_tools=get_user_details", nil); code != 400 {
		t.Fatalf("limit 50: %d", code)
	}
	// a context tool nobody knows is a typo: 400 naming it, as suggest
	// answers (it was ignored: 200 with alpha 1)
	code, m = call(t, srv.URL, "", "GET", "/v1/tools/search?query=cancel&context_tools=get_user_details,nosuchtool", nil)
	if msg, _ := m["error"].(string); code != 400 || !strings.Contains(msg, "context_tools[1]") || !strings.Contains(msg, "nosuchtool") {
		t.Fatalf("unknown context tool: %d %v, want 400 naming context_tools[1]", code, m)
	}
}

// A declared tool's schema nested deeper than MaxDAGSchemaDepth is a 400
// naming it: the DAG's property paths cost the square of the depth, and
// one 200 KB output schema 4,900 levels deep held a core for 29 s (a
// workflows walkthrough). A schema at the limit is ordered as before.
func TestPostDAGRefusesADeepSchema(t *testing.T) {
	_, srv := setup(t)
	nested := func(levels int) map[string]any {
		s := map[string]any{"type": "string"}
		for i := 0; i < levels; i++ {
			s = map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("p%d", i): s}}
		}
		return s
	}
	tools := func(levels int) map[string]any {
		return map[string]any{"tools": []any{
			map[string]any{"name": "a", "parameters": map[string]any{"type": "object"}, "output": nested(levels)},
			map[string]any{"name": "b", "parameters": map[string]any{"type": "object", "properties": map[string]any{"p0": map[string]any{"type": "string"}}}},
		}}
	}
	began := time.Now()
	code, m := call(t, srv.URL, "", "POST", "/v1/dags", tools(2000))
	if code != 400 || m["pointer"] != "/tools/0/output" || !strings.Contains(fmt.Sprint(m["reason"]), "levels") {
		t.Fatalf("a schema 4,001 levels deep: %d %v, want a 400 naming /tools/0/output", code, m)
	}
	// a guard against the old cost (29 s of a core, without the race
	// detector), not a speed figure: 2 s failed under the race detector
	// on a loaded machine (2.7 s, CI of 2026-12-01), so the bound is wide
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	// 31 schema levels: 63 JSON levels with the tool's own object's
	if code, m := call(t, srv.URL, "", "POST", "/v1/dags", tools(31)); code != 200 {
		t.Fatalf("a schema within the limit: %d %v", code, m)
	}
}

// Tools that share property names pair up as the square of their number:
// a request above MaxDAGMatches comparisons is a 400 naming tools, before
// any is compared (a 782 KB request of 256 tools was answered 89 MB, a
// security walkthrough); fewer shared names are ordered as before.
func TestPostDAGRefusesTooManyMatches(t *testing.T) {
	_, srv := setup(t)
	// 128 tools return the names 128 others take: 128 × 128 × names pairs
	tools := func(names int) map[string]any {
		props := map[string]any{}
		for j := range names {
			props[fmt.Sprintf("p%d_id", j)] = map[string]any{"type": "string"}
		}
		var tools []any
		for i := range httpapi.MaxDAGTools {
			member := "output"
			if i%2 == 1 {
				member = "parameters"
			}
			tools = append(tools, map[string]any{"name": fmt.Sprintf("t%d", i), member: map[string]any{"type": "object", "properties": props}})
		}
		return map[string]any{"tools": tools}
	}
	over := httpapi.MaxDAGMatches/(128*128) + 1
	began := time.Now()
	code, m := call(t, srv.URL, "", "POST", "/v1/dags", tools(over))
	if code != 400 || m["pointer"] != "/tools" || !strings.Contains(fmt.Sprint(m["error"]), fmt.Sprintf("tools: the tools' output properties and parameters pair up by name %d times, at most %d", 128*128*over, httpapi.MaxDAGMatches)) {
		t.Fatalf("%d shared names: %d %v, want a 400 naming tools", over, code, m["error"])
	}
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	if code, m := call(t, srv.URL, "", "POST", "/v1/dags", tools(2)); code != 200 || len(m["edges"].([]any)) != 128*128 {
		t.Fatalf("2 shared names: %d, want 200 with %d edges", code, 128*128)
	}
}

// A write to a completed workflow is a 409 whose hint can be followed: a
// fork needs a checkpoint, so a workflow that saved none is not told to
// fork itself (a fork that saved none is told its parent's checkpoint).
// Before, every such 409 said "fork it to go on" (a workflows
// walkthrough, 2026-12-06).
func TestCompletedWorkflowHintCanBeFollowed(t *testing.T) {
	ctx := context.Background()
	_, c, _ := startAt(t, t.TempDir())
	m := musts{t, c}
	m.w(c.Update(ctx, "p", 0, events.ChannelTasks, map[string]any{"id": "a"}))
	cp := m.w(c.Checkpoint(ctx, "p", 0))
	m.w(c.Fork(ctx, "p", cp.CheckpointID, "p-retry", nil))
	m.w(c.Update(ctx, "bare", 0, events.ChannelTasks, map[string]any{"id": "a"}))
	for _, id := range []string{"p", "p-retry", "bare"} {
		m.w(c.Complete(ctx, id, "aborted", nil))
	}
	for id, want := range map[string]string{
		"p":       "fork it from one of its checkpoints to go on",
		"p-retry": `it saved no checkpoint to fork from; fork its parent "p" from ` + cp.CheckpointID,
		"bare":    "it saved no checkpoint, so it cannot be forked either",
	} {
		_, err := c.Update(ctx, id, 1, events.ChannelTasks, map[string]any{"id": "b"})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != 409 || !strings.Contains(err.Error(), want) {
			t.Errorf("a write to completed %s: %v, want a 409 saying %q", id, err, want)
		}
	}
}
