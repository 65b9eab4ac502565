package toolgraph

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A failed call counts as an observation out of A but not for A → B, so
// the edge's confidence drops (issue 14 item 6: failed tool calls lower
// their edges' confidence).
func TestFailedCallsLowerConfidence(t *testing.T) {
	l := NewLearner()
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	n := 0
	call := func(wf, tool string, ok bool) {
		n++
		env, err := events.New(events.WorkflowTaskCompleted, "test", fmt.Sprintf("e%d", n), at.Add(time.Duration(n)*time.Second),
			events.TaskCompletedData{WorkflowID: wf, TaskID: fmt.Sprint(n), ToolID: tool, Success: ok})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Observe(&env); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		wf := fmt.Sprint("w", i)
		call(wf, "lookup", true)
		call(wf, "book", i < 2) // two of four bookings fail
		call(wf+"x", "lookup", true)
		call(wf+"x", "search", true)
	}
	book, _ := l.Graph().EdgeBetween("lookup", "book")
	search, _ := l.Graph().EdgeBetween("lookup", "search")
	if book.Count != 4 || book.Failed != 2 || book.Confidence != Confidence(2, 8) || search.Confidence != Confidence(4, 8) {
		t.Fatalf("book %+v, search %+v", book, search)
	}
	if next := l.Graph().Next([]string{"lookup"}, 2); next.Suggestions[0].Tool != "search" {
		t.Fatalf("after lookup: %+v (the failing tool must rank lower)", next.Suggestions)
	}
}

// When every observed transition failed, no edge has weight: Louvain
// (modularity divides by the total weight) must not run, and every tool is
// its own community instead of gonum indexing community -1 (found by the
// Reflexion import, whose failed Search calls follow each other).
func TestAllTransitionsFailedHasCommunities(t *testing.T) {
	l := NewLearner()
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	for i := range 6 {
		env, err := events.New(events.WorkflowTaskCompleted, "test", fmt.Sprintf("e%d", i), at.Add(time.Duration(i)*time.Second),
			events.TaskCompletedData{WorkflowID: "w", TaskID: fmt.Sprint(i), ToolID: []string{"Search", "Lookup"}[i%2], Success: false})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Observe(&env); err != nil {
			t.Fatal(err)
		}
	}
	tools := l.Graph().Tools()
	if len(tools) != 2 || tools[0].Community == tools[1].Community {
		t.Fatalf("tools %+v: want two tools in communities of their own", tools)
	}
}
