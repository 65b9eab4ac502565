package workflows

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
)

// replanCmd is a replan_dag command whose args carry a plan over tools
// with edges "a>b".
func replanCmd(wf, id, requirement string, tools []string, edges ...string) events.CommandEnqueuedData {
	d := dag.DAG{Tools: tools}
	for _, e := range edges {
		from, to, _ := strings.Cut(e, ">")
		d.Edges = append(d.Edges, dag.Edge{From: from, To: to})
	}
	raw, err := json.Marshal(ReplanArgs{Requirement: requirement, Plan: &ReplanPlan{DAG: d, Added: tools}})
	if err != nil {
		panic(err)
	}
	return events.CommandEnqueuedData{WorkflowID: wf, CommandID: id, Command: events.CommandReplanDAG, Args: raw}
}

// A replan is applied when a checkpoint names it processed, not when it is
// queued: its plan's tools join the DAG, the edges are merged and the
// layers recomputed; the DAG travels with checkpoints, resumes and forks.
func TestReplanMergesIntoRunningDAG(t *testing.T) {
	h := newHarness(t)
	if err := h.apply(scopeA, "bad", events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: "w1", CommandID: "x", Command: "replan_dag", Args: json.RawMessage(`{"requirement":"x"}`)}); !errors.Is(err, ErrReplan) || !strings.Contains(err.Error(), "/data/args/plan") {
		t.Fatalf("a replan without a plan: %v", err)
	}
	if err := h.apply(scopeA, "bad2", events.WorkflowCommandEnqueued, replanCmd("w1", "x", "", []string{"a", "b"}, "a>b", "b>a")); !errors.Is(err, ErrReplan) || !strings.Contains(err.Error(), "/data/args/plan/dag") || !strings.Contains(err.Error(), "a → b → a") {
		t.Fatalf("a plan with a cycle: %v", err)
	}
	h.must(scopeA, "c1", events.WorkflowCommandEnqueued, replanCmd("w1", "c1", "find the user", []string{"get_user_details"}))
	if s := h.state(scopeA, "w1"); s.DAG != nil {
		t.Fatalf("a queued replan changed the DAG: %s", js(s.DAG))
	}
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0, ProcessedCommands: []string{"c1"}})
	s := h.state(scopeA, "w1")
	if s.DAG == nil || !reflect.DeepEqual(s.DAG.Layers, [][]string{{"get_user_details"}}) || len(s.DAG.Replans) != 1 || s.DAG.Replans[0].Layer != 0 {
		t.Fatalf("after the first replan: %s", js(s.DAG))
	}
	h.must(scopeA, "c2", events.WorkflowCommandEnqueued, replanCmd("w1", "c2", "check the reservation", []string{"get_user_details", "get_reservation_details", "search_direct_flight"}, "get_user_details>get_reservation_details"))
	h.must(scopeA, "cp1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1, ProcessedCommands: []string{"c2"}})
	s = h.state(scopeA, "w1")
	want := [][]string{{"get_user_details", "search_direct_flight"}, {"get_reservation_details"}}
	if !reflect.DeepEqual(s.DAG.Layers, want) || !reflect.DeepEqual(s.DAG.Replans[1].Added, []string{"get_reservation_details", "search_direct_flight"}) || s.DAG.Replans[1].Requirement != "check the reservation" {
		t.Fatalf("after the second replan: %s", js(s.DAG))
	}
	// two plans acyclic alone whose union is not: the checkpoint that
	// processes both is rejected with the cycle named, nothing changes
	h.must(scopeA, "c3", events.WorkflowCommandEnqueued, replanCmd("w1", "c3", "", []string{"p", "q"}, "p>q"))
	h.must(scopeA, "c4", events.WorkflowCommandEnqueued, replanCmd("w1", "c4", "", []string{"q", "p"}, "q>p"))
	err := h.apply(scopeA, "cp2", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 2, ProcessedCommands: []string{"c3", "c4"}})
	if !errors.Is(err, ErrReplan) || !strings.Contains(err.Error(), "/data/processed_commands") || !strings.Contains(err.Error(), "p → q → p") {
		t.Fatalf("merging a cycle: %v", err)
	}
	if s2 := h.state(scopeA, "w1"); len(s2.DAG.Tools) != 3 || len(s2.PendingCommands) != 2 {
		t.Fatalf("a rejected checkpoint changed the state: %s", js(s2))
	}
	// a resume to checkpoint 0 brings back its DAG; a fork carries it
	h.must(scopeA, "r0", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:2", CheckpointEventID: "cp0"})
	if s := h.state(scopeA, "w1"); !reflect.DeepEqual(s.DAG.Tools, []string{"get_user_details"}) {
		t.Fatalf("after resuming checkpoint 0: %s", js(s.DAG))
	}
	parent, err := json.Marshal(h.state(scopeA, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	h.must(scopeA, "f", events.WorkflowForked, events.ForkedData{WorkflowID: "w2", ParentWorkflowID: "w1", ParentCheckpointID: "chronicle.workflows:0:2", State: parent})
	if s := h.state(scopeA, "w2"); s.DAG == nil || !reflect.DeepEqual(s.DAG.Tools, []string{"get_user_details"}) {
		t.Fatalf("the fork's DAG: %s", js(s.DAG))
	}
}
