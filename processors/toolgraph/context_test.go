package toolgraph

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// tool.transition.observed.v1 stays backward compatible: a transition
// written before the context field existed validates and counts first
// order only (no x/ row); one with a context counts the second-order row
// too; a context with an unknown field is rejected by the schema.
func TestTransitionContextIsOptional(t *testing.T) {
	s := openStore(t)
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	apply := func(i int, d TransitionData) error {
		env, err := events.New(events.ToolTransitionObserved, "test", fmt.Sprintf("t%d", i), at.Add(time.Duration(i)*time.Second), d)
		if err != nil {
			return err
		}
		env.Scope = "project:a"
		if err := events.Validate(&env); err != nil {
			return err
		}
		pos := projections.Position{Topic: string(events.TopicToolgraph), Offset: int64(i)}
		_, err = s.Apply(Name, pos, &env, Processor{RecomputeEvery: -1}.Apply)
		return err
	}
	steps := []TransitionData{
		{Graph: GraphID, WorkflowID: "w1", To: "a", Call: 1},
		{Graph: GraphID, WorkflowID: "w1", From: "a", To: "b", Call: 2}, // written before the context field
		{Graph: GraphID, WorkflowID: "w2", To: "a", Call: 1},
		{Graph: GraphID, WorkflowID: "w2", From: "a", To: "b", Call: 2, Context: &TransitionContext{}},
		{Graph: GraphID, WorkflowID: "w2", From: "b", To: "b", Call: 3, Failed: true, Context: &TransitionContext{Before: "a"}},
		{Graph: GraphID, WorkflowID: "w2", From: "b", To: "c", Call: 4, Context: &TransitionContext{Before: "b", FromFailed: true}},
	}
	for i, d := range steps {
		if err := apply(i, d); err != nil {
			t.Fatalf("transition %d: %v", i, err)
		}
	}
	x := map[string]string{}
	for k, v := range rows(t, s) {
		if len(k) > 2 && k[:2] == "x/" {
			x[k] = v
		}
	}
	want := map[string]string{
		"x/project:a//0/a/0/b":  `{"from":"a","to":"b","observed_count":1}`,
		"x/project:a/a/0/b/0/b": `{"before":"a","from":"b","to":"b","observed_count":1}`,
		"x/project:a/b/0/b/1/c": `{"before":"b","from":"b","from_failed":true,"to":"c","observed_count":1}`,
	}
	if len(x) != len(want) {
		t.Fatalf("context rows %v, want %v", x, want)
	}
	for k, v := range want {
		if x[k] != v {
			t.Errorf("%s = %s, want %s", k, x[k], v)
		}
	}
	g, err := LoadIn(s, []string{"project:a"})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := g.EdgeBetween("a", "b"); !ok || e.Count != 2 {
		t.Errorf("a→b counts both transitions, with and without context: %+v", e)
	}
	// after a failed b that followed a: the outcome levels know one call
	// (below the floor), the bigram b → b, c once each
	p := g.NextCalls([]Call{{Tool: "a"}, {Tool: "b", Failed: true}}, 3)
	if len(p.Levels) != 2 || p.Levels[0] != LevelBigram {
		t.Errorf("levels %v", p.Levels)
	}
	bad, err := events.New(events.ToolTransitionObserved, "test", "bad", at, map[string]any{
		"graph": GraphID, "workflow_id": "w", "from": "a", "to": "b", "call": 2, "context": map[string]any{"previous": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := events.Validate(&bad); err == nil {
		t.Error("a context with an unknown field: want a schema error")
	}
}
