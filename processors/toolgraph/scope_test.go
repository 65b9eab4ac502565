package toolgraph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// inScope sets the scope of evs (and prefixes their ids, so that the two
// projects' events are distinct events).
func inScope(scope string, evs []events.Envelope) []events.Envelope {
	out := make([]events.Envelope, len(evs))
	for i, e := range evs {
		e.Scope = scope
		e.ID = scope + "-" + e.ID
		out[i] = e
	}
	return out
}

// Two projects with different tool sequences, learned through the store
// (Transitions, then Processor on chronicle.toolgraph): project A's
// predictions, tools and paths are the same whether or not project B's
// events were applied, and whether B's events come before, between or
// after A's; B's graph never contains A's edges; the union of both
// (LoadIn with both scopes, and Load) is the graph a Learner builds from
// all the events.
func TestGraphPerScope(t *testing.T) {
	aEvs := inScope("project:a", sequences(t,
		[]string{"search", "book", "pay"}, []string{"search", "book", "pay"}, []string{"search", "book", "pay"},
		[]string{"search", "book", "pay"}, []string{"search", "book", "pay"}, []string{"search", "cancel"}))
	bEvs := inScope("project:b", sequences(t,
		[]string{"search", "cancel", "refund"}, []string{"search", "cancel", "refund"}, []string{"search", "cancel", "refund"},
		[]string{"search", "cancel", "refund"}, []string{"search", "cancel", "refund"}, []string{"search", "cancel", "refund"},
		[]string{"search", "book"}))
	learnInto := func(evs []events.Envelope) *projections.Store {
		s := openStore(t)
		applyAll(t, s, Processor{RecomputeEvery: 4}, evs)
		return s
	}
	type view struct {
		Next  Prediction
		First Prediction
		Tools []ToolInfo
		Path  string
	}
	viewOf := func(s *projections.Store, scopes []string) view {
		g, err := LoadIn(s, scopes)
		if err != nil {
			t.Fatal(err)
		}
		v := view{Next: g.Next([]string{"search"}, 3), First: g.Next(nil, 3), Tools: g.Tools()}
		r, err := g.Path("search", "pay")
		v.Path = fmt.Sprint(r.Tools, err)
		return v
	}
	alone := viewOf(learnInto(aEvs), []string{"project:a"})
	if alone.Next.Basis != BasisGraph || alone.Next.Suggestions[0].Tool != "book" {
		t.Fatalf("project A alone, after search: %+v", alone.Next)
	}
	mixed := append(append(append([]events.Envelope{}, bEvs[:9]...), aEvs...), bEvs[9:]...)
	for name, evs := range map[string][]events.Envelope{
		"B then A":    append(append([]events.Envelope{}, bEvs...), aEvs...),
		"A then B":    append(append([]events.Envelope{}, aEvs...), bEvs...),
		"B around A":  mixed,
		"interleaved": interleave([][]events.Envelope{aEvs, bEvs}),
	} {
		s := learnInto(evs)
		if got := viewOf(s, []string{"project:a"}); !reflect.DeepEqual(got, alone) {
			ga, _ := json.Marshal(got)
			wa, _ := json.Marshal(alone)
			t.Errorf("%s: project A's view changed by project B's events:\n%s\nwant\n%s", name, ga, wa)
		}
		gb, err := LoadIn(s, []string{"project:b"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := gb.EdgeBetween("book", "pay"); ok {
			t.Errorf("%s: project B's graph has project A's edge book→pay", name)
		}
		if p := gb.Next([]string{"search"}, 1); p.Suggestions[0].Tool != "cancel" {
			t.Errorf("%s: project B after search: %+v, want cancel", name, p.Suggestions)
		}
		union := learnAll(t, evs)
		for _, scopes := range [][]string{{"project:a", "project:b"}, nil} {
			g, err := LoadIn(s, scopes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(observe(g), observe(union)) {
				t.Errorf("%s: union of %v differs from the graph learned from all events", name, scopes)
			}
		}
		if v, err := Version(s, []string{"project:a"}); err != nil || v != len(aEvs) {
			t.Errorf("%s: Version(project:a) = %d, %v; want %d", name, v, err, len(aEvs))
		}
		if sc, err := Scopes(s); err != nil || !reflect.DeepEqual(sc, []string{"project:a", "project:b"}) {
			t.Errorf("%s: Scopes = %v, %v", name, sc, err)
		}
	}
	empty, err := LoadIn(learnInto(aEvs), []string{})
	if err != nil || empty.NumTools() != 0 {
		t.Errorf("no scopes: %d tools, %v", empty.NumTools(), err)
	}
	// a scope whose name is a prefix of another's does not see its rows
	s := learnInto(append(inScope("project:ab", sequences(t, []string{"x", "y"})), aEvs...))
	if g, err := LoadIn(s, []string{"project:a"}); err != nil || g.NumTools() != 4 || g.Transitions() != 11 {
		t.Errorf("project:a beside project:ab: %d tools, %d transitions, %v", g.NumTools(), g.Transitions(), err)
	}
}
