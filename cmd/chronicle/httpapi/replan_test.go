package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/projections"
)

// replanOf decodes the args of the pending replan_dag command id.
func replanOf(t *testing.T, s workflows.State, id string) workflows.ReplanArgs {
	t.Helper()
	for _, c := range s.PendingCommands {
		if c.CommandID == id {
			var a workflows.ReplanArgs
			if err := json.Unmarshal(c.Args, &a); err != nil || a.Plan == nil {
				t.Fatalf("command %s args %s: %v", id, c.Args, err)
			}
			return a
		}
	}
	t.Fatalf("command %s not pending: %s", id, jsonOf(t, s.PendingCommands))
	return workflows.ReplanArgs{}
}

// replan_dag over HTTP: the API computes the plan (named tools, or a
// hybrid tool search for a requirement, then the DAG builder) and writes
// it into the command; a checkpoint that names the command processed
// merges it into the running DAG with the layers recomputed. A second
// replan while one is pending is refused (409), a merged DAG with a cycle
// is refused naming it (422), and a replay rebuilds the same projection
// (whole, and up to each checkpoint).
func TestReplanDAGBetweenLayers(t *testing.T) {
	p, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	const wf = "replan/w"
	r1 := m.w(c.Enqueue(ctx, wf, events.CommandReplanDAG, map[string]any{"tools": []string{"get_user_details"}}, "agent"))
	if r1.State.DAG != nil {
		t.Fatalf("a queued replan changed the DAG: %s", jsonOf(t, r1.State.DAG))
	}
	cp0 := m.w(c.Checkpoint(ctx, wf, 0, r1.EventID))
	if d := cp0.State.DAG; d == nil || !reflect.DeepEqual(d.Layers, [][]string{{"get_user_details"}}) {
		t.Fatalf("after checkpoint 0: %s", jsonOf(t, cp0.State.DAG))
	}
	// a requirement: the API searches the tool graph and the catalogue
	r2 := m.w(c.Enqueue(ctx, wf, events.CommandReplanDAG, map[string]any{"requirement": "search for a direct flight between two airports on a date", "k": 1}, "agent"))
	plan := replanOf(t, r2.State.State, r2.EventID).Plan
	if len(plan.Added) != 1 || slices.Contains(plan.Added, "get_user_details") || len(plan.Search) == 0 || len(plan.DAG.Tools) != 2 {
		t.Fatalf("the search's plan: %s", jsonOf(t, plan))
	}
	var ae *client.Error
	if _, err := c.Enqueue(ctx, wf, events.CommandReplanDAG, map[string]any{"tools": []string{"calculate"}}, "agent"); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("a second pending replan: %v", err)
	}
	// its 409 names the member, as the route's other refusals do
	if code, b := call(t, c.Base, "", "POST", "/v1/workflows/"+url.PathEscape(wf)+"/commands", map[string]any{"command": "replan_dag", "args": map[string]any{"tools": []string{"calculate"}}}); code != 409 || b["pointer"] != "/command" || b["reason"] == nil {
		t.Fatalf("a second pending replan over HTTP: %d %v, want a 409 at /command with a reason", code, b)
	}
	cp1 := m.w(c.Checkpoint(ctx, wf, 1, r2.EventID))
	d := cp1.State.DAG
	cat, err := dag.AirlineCatalog()
	if err != nil {
		t.Fatal(err)
	}
	want, err := dag.Build(cat, []string{"get_user_details", plan.Added[0]}, dag.DefaultRule)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Tools, want.Tools) || !reflect.DeepEqual(d.Layers, want.Layers) || len(d.Replans) != 2 || !reflect.DeepEqual(d.Replans[1].Added, plan.Added) {
		t.Fatalf("after checkpoint 1: %s, the builder: %v", jsonOf(t, d), want.Layers)
	}
	t.Logf("the search added %s: layers %v", plan.Added[0], d.Layers)
	// the user's and the reservation's details feed each other (user_id,
	// reservations): refused, the cycle named
	code, body := call(t, c.Base, "", "POST", "/v1/workflows/replan%2Fw/commands", map[string]any{"command": "replan_dag", "args": map[string]any{"tools": []string{"get_reservation_details"}}})
	if code != 422 || fmt.Sprint(body["cycle"]) != "[get_user_details get_reservation_details get_user_details]" {
		t.Fatalf("a cycle: %d %v", code, body)
	}
	for _, bad := range []map[string]any{{}, {"tools": []string{"launch_rocket"}}, {"requirement": "x", "tools": []string{"think"}}, {"plan": map[string]any{}}} {
		if code, body := call(t, c.Base, "", "POST", "/v1/workflows/replan%2Fw/commands", map[string]any{"command": "replan_dag", "args": bad}); code != 400 {
			t.Fatalf("args %v: %d %v", bad, code, body)
		}
	}
	// send_certificate takes the user_id get_user_details returns: the
	// DAG gains a layer
	r3 := m.w(c.Replan(ctx, wf, workflows.ReplanArgs{Tools: []string{"send_certificate"}}, "human:ana"))
	cp2 := m.w(c.Checkpoint(ctx, wf, 2, r3.EventID))
	want, err = dag.Build(cat, append(slices.Clone(d.Tools), "send_certificate"), dag.DefaultRule)
	if err != nil {
		t.Fatal(err)
	}
	d = cp2.State.DAG
	if len(d.Layers) != 2 || !reflect.DeepEqual(d.Layers, want.Layers) || !reflect.DeepEqual(d.Layers[1], []string{"send_certificate"}) {
		t.Fatalf("after checkpoint 2: %v, the builder: %v", d.Layers, want.Layers)
	}
	m.w(c.Enqueue(ctx, wf, events.CommandReplanDAG, map[string]any{"tools": []string{"calculate"}}, "agent")) // stays pending

	waitCaughtUp(t, p)
	full, err := projections.Open(filepath.Join(t.TempDir(), "full"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: full, Processors: pipeline.DefaultProcessors()}); err != nil {
		t.Fatal(err)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := full.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if live.Projections[workflows.Name] != rebuilt.Projections[workflows.Name] {
		t.Fatalf("workflows projection: live %q, replayed %q", live.Projections[workflows.Name], rebuilt.Projections[workflows.Name])
	}
	replayed, _, err := workflows.Get(full, events.EntityKey(events.DefaultScope, wf))
	if err != nil || fmt.Sprint(replayed.DAG.Layers) != fmt.Sprint(d.Layers) {
		t.Fatalf("replayed DAG %v (%v), live %v", replayed.DAG, err, d.Layers)
	}
	pos, err := workflows.ParseCheckpointID(cp1.CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	until, err := projections.Open(filepath.Join(t.TempDir(), "until"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer until.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: until, Processors: pipeline.DefaultProcessors(), Until: processors.Until{Pos: &pos}}); err != nil {
		t.Fatal(err)
	}
	at, err := c.StateAt(ctx, wf, cp1.CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := workflows.Get(until, events.EntityKey(events.DefaultScope, wf))
	if err != nil || jsonOf(t, got) != jsonOf(t, at.State) {
		t.Fatalf("replay --until checkpoint 1:\n%s\n%s (%v)", jsonOf(t, got), jsonOf(t, at.State), err)
	}
}
