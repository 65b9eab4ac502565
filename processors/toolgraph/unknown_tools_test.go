package toolgraph

import (
	"slices"
	"testing"
)

// A context naming a tool the graph has never seen says so (unknown_tools,
// each once, in order): "search" for "Search" silently gave the priors'
// predictions (found by a new user's walkthrough).
func TestPredictionNamesUnknownTools(t *testing.T) {
	g := NewGraph()
	_ = g.putNode(nodeRow{Tool: "Search", Calls: 2, Starts: 2, Out: 2})
	_ = g.putNode(nodeRow{Tool: "Finish", Calls: 2, In: 2})
	_ = g.putEdge(edgeRow{From: "Search", To: "Finish", Count: 2})
	if p := g.Next([]string{"Search"}, 3); p.UnknownTools != nil {
		t.Fatalf("known context: unknown_tools %v", p.UnknownTools)
	}
	p := g.Next([]string{"search", "Search", "lookup", "search"}, 3)
	if !slices.Equal(p.UnknownTools, []string{"search", "lookup"}) {
		t.Fatalf("unknown_tools %v, want [search lookup]", p.UnknownTools)
	}
	if p := g.NextCalls([]Call{{Tool: "nope", Failed: true}}, 3); !slices.Equal(p.UnknownTools, []string{"nope"}) {
		t.Fatalf("NextCalls: unknown_tools %v", p.UnknownTools)
	}
}
