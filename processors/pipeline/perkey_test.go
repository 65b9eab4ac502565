package pipeline_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/bench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/processortest"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections"
)

// The default processors that claim processors.KeyedState keep to it on
// the bundled tau-bench sessions, Reflexion multi-pass runs, and made-up
// workflows and tree searches in two scopes: no row of theirs is read or
// written by the events of two record keys
// (processortest.CheckStatePerKey). The engine applies their partitions
// concurrently on that claim. (The dead-letter projection's letters have
// no events.Key: it is not checked.)
func TestDefaultProcessorsStatePerKey(t *testing.T) {
	envs, err := bench.Events(3000)
	if err != nil {
		t.Fatal(err)
	}
	tt := processortest.New(t, pipeline.DefaultProcessors(), processortest.InMemory(), processortest.Partitions(4))
	for i := 0; i < len(envs); i += 100 {
		if _, err := tt.Publish(envs[i:min(i+100, len(envs))]...); err != nil {
			t.Fatal(err)
		}
	}
	run, err := reflexion.Bundled(reflexion.RunReflexion)
	if err != nil {
		t.Fatal(err)
	}
	refl, err := reflexion.Events(run, reflexion.RunReflexion)
	if err != nil {
		t.Fatal(err)
	}
	refl = refl[:min(len(refl), 1500)]
	for i := 0; i < len(refl); i += 100 {
		if _, err := tt.Publish(refl[i:min(i+100, len(refl))]...); err != nil {
			t.Fatal(err)
		}
	}
	// workflows of two scopes, each through its reducer, a decision, a
	// command, a checkpoint and its completion
	at := time.Date(2026, 11, 7, 8, 0, 0, 0, time.UTC)
	var wfs []events.Envelope
	add := func(scope, wf, id string, typ events.Type, data any) {
		at = at.Add(time.Second)
		env, err := events.New(typ, "test/workflows", wf+"-"+id, at, data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		wfs = append(wfs, env)
	}
	for i := 0; i < 40; i++ {
		scope, wf := []string{"project:a", "project:b"}[i%2], fmt.Sprintf("wf-%d", i)
		add(scope, wf, "r0", events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: wf, Layer: 0, Channel: "tasks", Update: json.RawMessage(`{"id":"t1"}`)})
		add(scope, wf, "d1", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: wf, DecisionID: "d1", Kind: "agent", Question: "continue?"})
		add(scope, wf, "a1", events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: wf, DecisionID: "d1", Answer: "continue"})
		add(scope, wf, "c1", events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: wf, CommandID: "c1", Command: "inject_tasks", Args: json.RawMessage(`{"tasks":[{"id":"t2"}]}`)})
		add(scope, wf, "cp", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: wf, Layer: 0, ProcessedCommands: []string{"c1"}})
		add(scope, wf, "done", events.WorkflowCompleted, events.WorkflowCompletedData{WorkflowID: wf, Outcome: "success"})
	}
	// tree searches of two scopes: a start, a reservation and two children
	for i := 0; i < 40; i++ {
		scope, id := []string{"project:a", "project:b"}[i%2], fmt.Sprintf("search-%d", i)
		add(scope, id, "start", events.SearchStarted, events.SearchStartedData{SearchID: id, Goal: "obtain 24", RootState: "root",
			Config:   events.SearchConfig{BeamWidth: 2, K: 8, MaxDepth: 4, CostPerStep: 0.25},
			Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}})
		add(scope, id, "quota", events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: id, Expansion: 1, NodeID: "r", Tokens: 100})
		for j, state := range []string{"a", "b"} {
			parent, h, score, f := "r", 0.5, 0.5, 0.75
			add(scope, id, "node"+state, events.SearchNodeExpanded, events.SearchNodeData{SearchID: id, NodeID: fmt.Sprintf("r.%d", j), ParentID: &parent,
				Expansion: 1, Depth: 1, State: state, StateDigest: treesearch.Digest(state), Candidate: "step to " + state, G: 0.25, H: &h, F: &f, Score: &score})
		}
	}
	outs, err := tt.Publish(wfs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		for name, r := range o {
			if (name == "workflows" || name == "treesearch") && r.Result != projections.Applied {
				t.Fatalf("%s: %s %v (%v), want applied (the check would see nothing of it)", wfs[i].ID, name, r.Result, r.Err)
			}
		}
	}
	processortest.CheckStatePerKey(t, tt)
}
