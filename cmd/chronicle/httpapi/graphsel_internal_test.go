package httpapi

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestGraphSelFailsClosed: a selection of no scope is the empty graph
// however it came about (the zero value, graphsOf(), a read list cloned
// to nil), never every scope's; every scope's graph takes everyGraph.
// c491f8a fixed a leak where a write-only token's empty read list became
// nil on the way and nil meant every scope.
func TestGraphSelFailsClosed(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	off := int64(0)
	for _, sc := range []string{"project:a", "project:b"} {
		for i, tool := range []string{"get_user_details", "get_reservation_details", "cancel_reservation"} {
			id := fmt.Sprintf("%s-%d", sc, i)
			env, err := events.New(events.WorkflowTaskCompleted, "test/graphsel", id, base.Add(time.Duration(off)*time.Second),
				events.TaskCompletedData{WorkflowID: "w-" + sc, TaskID: id, ToolID: tool + "_" + sc[len("project:"):], Success: true})
			if err != nil {
				t.Fatal(err)
			}
			env.SessionID, env.Scope = "s-"+sc, sc
			if err := events.Validate(&env); err != nil {
				t.Fatal(err)
			}
			pos := projections.Position{Topic: string(events.TopicSessions), Partition: 0, Offset: off}
			if _, err := toolgraph.ApplyLocally(store, toolgraph.Processor{}, pos, &env); err != nil {
				t.Fatal(err)
			}
			off++
		}
	}
	s := &Server{P: &pipeline.Pipeline{Store: store}}
	tools := func(sel graphSel) []string {
		t.Helper()
		g, err := s.toolGraphIn(sel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range g.Tools() {
			out = append(out, tl.Tool)
		}
		slices.Sort(out)
		return out
	}
	if got := tools(everyGraph()); len(got) != 6 {
		t.Fatalf("every scope's graph: %v, want the 6 tools of both projects", got)
	}
	if got := tools(graphsOf("project:a")); len(got) != 3 || got[0] != "cancel_reservation_a" {
		t.Fatalf("project:a's graph: %v, want its 3 tools", got)
	}
	var readsNothing []string // a write-only token's read list
	for name, sel := range map[string]graphSel{
		"zero value":          {},
		"graphsOf()":          graphsOf(),
		"a clone of no scope": graphsOf(slices.Clone(readsNothing)...),
		"an empty list":       {scopes: []string{}},
	} {
		if got := tools(sel); len(got) != 0 {
			t.Errorf("%s: tools %v, want the empty graph", name, got)
		}
	}
	// the cache is per selection: the empty graph asked first does not
	// answer for every scope's, nor the reverse
	if got := tools(everyGraph()); len(got) != 6 {
		t.Fatalf("every scope's graph after the empty one: %v", got)
	}
}
