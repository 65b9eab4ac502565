package toolgraph

import (
	"reflect"
	"testing"
)

// Profiles counts calls and starts and names the most frequent neighbours
// each way, self-loops left out, ties by name, at most k.
func TestProfiles(t *testing.T) {
	g := learnAll(t, sequences(t,
		[]string{"a", "b", "c"},
		[]string{"a", "b", "b", "d"},
		[]string{"a", "c"},
		[]string{"e", "b", "c"},
	))
	got := map[string]Profile{}
	var order []string
	for _, p := range g.Profiles(2) {
		got[p.Tool] = p
		order = append(order, p.Tool)
	}
	if !reflect.DeepEqual(order, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("order %v", order)
	}
	want := map[string]Profile{
		"a": {Tool: "a", Calls: 3, Starts: 3, After: []string{"b", "c"}},
		"b": {Tool: "b", Calls: 4, Before: []string{"a", "e"}, After: []string{"c", "d"}},
		"c": {Tool: "c", Calls: 3, Before: []string{"b", "a"}},
		"d": {Tool: "d", Calls: 1, Before: []string{"b"}},
		"e": {Tool: "e", Calls: 1, Starts: 1, After: []string{"b"}},
	}
	for tool, w := range want {
		if !reflect.DeepEqual(got[tool], w) {
			t.Errorf("%s: %+v, want %+v", tool, got[tool], w)
		}
	}
	if p := g.Profiles(1); len(p[1].Before) != 1 || p[1].Before[0] != "a" {
		t.Errorf("k=1: b before %v, want [a]", p[1].Before)
	}
	for key, tool := range map[string]string{nodeKey("project:a", "x/y z"): "x/y z", edgeKey("project:a", "a", "b"): "", "n/project:a/%zz": "", "n/x": ""} {
		if got := ToolOfKey(key); got != tool {
			t.Errorf("ToolOfKey(%q) = %q, want %q", key, got, tool)
		}
	}
}
