package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// searchRuleEvent is a tree-search event of project:a whose data is data
// with the members of change set (nil deletes one).
func searchRuleEvent(t *testing.T, typ events.Type, id string, data map[string]any, change map[string]any) events.Envelope {
	t.Helper()
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	for k, v := range change {
		if v == nil {
			delete(d, k)
		} else {
			d[k] = v
		}
	}
	env, err := events.New(typ, "rules/test", id, time.Now(), d)
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	return env
}

// A tree-search event that breaks a Beam-A* rule its own members decide
// is a 400 on POST /v1/events naming the member, nothing written; before,
// it was a 202 and the break showed only later as the treesearch
// processor's dead letter (a tree-search walkthrough, 2026-12-07). Each
// case breaks one rule of a node (or decision, completion) the route
// takes as sent.
func TestSearchRulesAreCheckedWhenProduced(t *testing.T) {
	p, _, base := scopedServer(t)
	node := map[string]any{"search_id": "rules", "node_id": "r.0", "parent_id": "r", "expansion": 1, "depth": 1, "state": "a",
		"state_digest": treesearch.Digest("a"), "candidate": "step", "g": 0.5, "h": 0.5, "f": 1.0, "score": 0.5, "pruned_reason": nil}
	decided := map[string]any{"search_id": "rules", "expansion": 1, "node_id": "r", "children": []string{"r.0"}, "kept": []string{"r.0"}, "dropped": []string{},
		"tokens_used": 150, "tokens_refunded": 0}
	completed := map[string]any{"search_id": "rules", "outcome": "exhausted"}
	null := json.RawMessage("null") // sent as null (nil leaves the member out)
	for i, tc := range []struct {
		typ     events.Type
		data    map[string]any
		change  map[string]any
		pointer string
		reason  string
	}{
		{events.SearchNodeExpanded, node, map[string]any{"f": 0.9}, "/data/f", "0.9 is not g + h = 1"},
		{events.SearchNodeExpanded, node, map[string]any{"h": 0.25, "f": 0.75}, "/data/h", "0.25 is not 1 − score = 0.5"},
		{events.SearchNodeExpanded, node, map[string]any{"g": 1e308, "h": 1e308, "f": 0, "score": nil}, "/data/h", "g + h overflows float64"},
		{events.SearchNodeExpanded, node, map[string]any{"pruned_reason": "prefilter"}, "/data/h", "null (∞) exactly when pruned_reason is set"},
		{events.SearchNodeExpanded, node, map[string]any{"f": null}, "/data/h", "null (∞) exactly when pruned_reason is set"},
		{events.SearchNodeExpanded, node, map[string]any{"h": null, "f": null, "score": nil, "pruned_reason": "boring"}, "/data/pruned_reason", `"boring" is not duplicate, prefilter or hard_check`},
		{events.SearchNodeExpanded, node, map[string]any{"h": null, "f": null, "score": nil, "pruned_reason": "hard_check"}, "/data/hard_fail", "exactly when pruned_reason is \"hard_check\""},
		{events.SearchNodeExpanded, node, map[string]any{"h": null, "f": null, "pruned_reason": "duplicate", "duplicate_of": "r"}, "/data/score", "without an evaluator call"},
		{events.SearchNodeExpanded, node, map[string]any{"parent_id": nil}, "/data/parent_id", "required"},
		{events.SearchNodeExpanded, node, map[string]any{"depth": 0, "g": 0, "f": 0.5}, "/data/depth", "at depth 1 at least"},
		{events.SearchFrontierDecided, decided, map[string]any{"tokens_refunded": 10, "tokens_overrun": 20}, "/data/tokens_refunded", "not both"},
		{events.SearchCompleted, completed, map[string]any{"refused_tokens": 50}, "/data/refused_tokens", "not exhausted"},
		// non-negative tokens: the schemas' minimum 0, as before
		{events.SearchNodeExpanded, node, map[string]any{"tokens_used": -1}, "/data/tokens_used", ""},
	} {
		env := searchRuleEvent(t, tc.typ, fmt.Sprintf("rule-%d", i), tc.data, tc.change)
		code, m := call(t, base, "tok-a", "POST", "/v1/events", env)
		if code != 400 || m["pointer"] != tc.pointer || !strings.Contains(fmt.Sprint(m["reason"]), tc.reason) {
			b, _ := json.Marshal(env.Data)
			t.Errorf("%s %s: %d %v; want 400 naming %s, %q", tc.typ, b, code, m, tc.pointer, tc.reason)
		}
	}
	// the unbroken events are taken (and dead-lettered for want of a
	// started search: nothing above was written)
	for i, env := range []events.Envelope{
		searchRuleEvent(t, events.SearchNodeExpanded, "ok-0", node, nil),
		searchRuleEvent(t, events.SearchFrontierDecided, "ok-1", decided, map[string]any{"tokens_overrun": 20}),
		searchRuleEvent(t, events.SearchCompleted, "ok-2", completed, nil),
	} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", env); code != 202 {
			t.Fatalf("unbroken event %d (%s): %d %v", i, env.Type, code, m)
		}
	}
	letters := waitDeadLetters(t, p, base, "tok-a", "", 3)
	for _, l := range letters {
		if strings.HasPrefix(fmt.Sprint(l["event_id"]), "rule-") {
			t.Errorf("a refused event was written: %v", l)
		}
	}
}

// g = depth × cost_per_step needs the search's config, which a node does
// not carry: POST /v1/events takes the node (202) and the treesearch
// processor dead-letters it naming /data/g (before, any g was applied).
func TestGIsCheckedWhenApplied(t *testing.T) {
	p, _, base := scopedServer(t)
	evs := quotaSearchIn(t, "project:a", "g-rule")[:3] // started (cost_per_step 0.5), reserved, node n1 at depth 1
	var d events.SearchNodeData
	if err := json.Unmarshal(evs[2].Data, &d); err != nil {
		t.Fatal(err)
	}
	d.G, *d.F = 0.25, 0.25+*d.H
	node, err := events.New(events.SearchNodeExpanded, evs[2].Source, evs[2].ID, time.Now(), d)
	if err != nil {
		t.Fatal(err)
	}
	node.Scope = "project:a"
	evs[2] = node
	for _, e := range evs {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{e}); code != 202 {
			t.Fatalf("%s: %d %v", e.Type, code, m)
		}
	}
	for _, l := range waitDeadLetters(t, p, base, "tok-a", "?type="+string(events.SearchNodeExpanded), 1) {
		if l["event_id"] == node.ID {
			if l["pointer"] != "/data/g" || !strings.Contains(fmt.Sprint(l["reason"]), "0.25 is not depth × cost_per_step = 1 × 0.5 = 0.5") {
				t.Fatalf("the letter: %v", l)
			}
			return
		}
	}
	t.Fatalf("no dead letter of node %s", node.ID)
}
