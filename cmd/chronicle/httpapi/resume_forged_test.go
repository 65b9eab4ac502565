package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// A search written through POST /v1/events that names the built-in Game of
// 24 components but holds no Game of 24 state — eight numbers at the root
// and seven at the paused node, or a word — is refused at its resume (422
// naming the state, nothing written): the resume worker could not drive it.
// Before, the resume was a 202, and the worker spent minutes of a core on
// the eight numbers while every other search's resume waited, or failed on
// the word and left the search running for good (a walkthrough's finding).
func TestResumeOfAForgedBuiltinSearchIsRefused(t *testing.T) {
	p, _, base := scopedServer(t)
	comp := game24.Arithmetic{}.Component()
	forge := func(id, root, child string) {
		t.Helper()
		ev := func(n int, typ events.Type, data map[string]any) map[string]any {
			return map[string]any{"specversion": "1.0", "id": fmt.Sprintf("%s-%d", id, n), "source": "test/forger", "type": string(typ), "scope": "project:a", "data": data}
		}
		batch := []any{
			ev(1, events.SearchStarted, map[string]any{"search_id": id, "goal": "g", "root_state": root,
				"config":   map[string]any{"beam_width": 5, "k": 48, "max_depth": 8, "max_expansions": 200, "cost_per_step": 0.05},
				"proposer": map[string]any{"name": comp.Name, "version": comp.Version}, "evaluator": map[string]any{"name": comp.Name, "version": comp.Version}}),
			ev(2, events.SearchQuotaReserved, map[string]any{"search_id": id, "expansion": 1, "node_id": "r", "tokens": 1000}),
			ev(3, events.SearchNodeExpanded, map[string]any{"search_id": id, "node_id": "r.01", "parent_id": "r", "expansion": 1, "depth": 1, "state": child,
				"state_digest": treesearch.Digest(child), "candidate": "c", "g": 0.05, "h": 0, "f": 0.05, "score": 1, "needs_human": true, "tokens_used": 68}),
			ev(4, events.SearchFrontierDecided, map[string]any{"search_id": id, "expansion": 1, "node_id": "r", "children": []string{"r.01"}, "kept": []string{"r.01"}, "dropped": []string{}, "tokens_used": 68, "tokens_refunded": 932}),
			ev(5, events.SearchPaused, map[string]any{"search_id": id, "node_id": "r.01", "question": "ok?"}),
		}
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", batch); code != 202 {
			t.Fatalf("the forged search %s: %d %v", id, code, m)
		}
	}
	big := strings.TrimSpace(strings.Repeat("1000003 ", 8))
	forge("eight", big, "1 "+strings.TrimSpace(strings.Repeat("1000003 ", 6)))
	forge("word", "x y", "x")
	forge("exponent", "1 2 3 4", "1e99999999 2 3")
	waitCaughtUp(t, p)
	for id, want := range map[string]string{"eight": "its root_state: no Game of 24 puzzle", "word": `its root_state: no Game of 24 puzzle`, "exponent": "node r.01's state: no Game of 24 state"} {
		code, m := call(t, base, "tok-a", "POST", "/v1/searches/"+id+"/resume", map[string]any{"decision": "approve"})
		if code != 422 || !strings.Contains(fmt.Sprint(m["error"]), want) {
			t.Errorf("resume of %s: %d %v; want a 422 saying %q", id, code, m, want)
		}
		if s, _, _ := treesearch.Get(p.Store, "project:a/"+id); s.Status != treesearch.StatusPaused || len(s.Decisions) != 0 {
			t.Errorf("%s after the refused resume: %s with %d decisions; want paused, none (nothing written)", id, s.Status, len(s.Decisions))
		}
		// the same resume written as an event: refused alike, the whole
		// batch with it (before, a 202, the worker dead-lettered it and
		// the search stayed running for good)
		resumed := map[string]any{"specversion": "1.0", "id": id + "-resume", "source": "test/forger", "type": string(events.SearchResumed), "scope": "project:a",
			"data": map[string]any{"search_id": id, "decision": "approve"}}
		other := map[string]any{"specversion": "1.0", "id": id + "-other", "source": "test/forger", "type": string(events.SearchStarted), "scope": "project:a",
			"data": map[string]any{"search_id": "elsewhere-" + id, "goal": "g", "root_state": "1 2 3 4",
				"config":   map[string]any{"beam_width": 5, "k": 48, "max_depth": 8, "cost_per_step": 0.05},
				"proposer": map[string]any{"name": "p", "version": "1"}, "evaluator": map[string]any{"name": "e", "version": "1"}}}
		code, m = call(t, base, "tok-a", "POST", "/v1/events", []any{other, resumed})
		if code != 422 || m["pointer"] != "/data/search_id" || m["index"] != float64(1) || !strings.Contains(fmt.Sprint(m["error"]), want) {
			t.Errorf("resume of %s as an event: %d %v; want a 422 for event 1 at /data/search_id saying %q", id, code, m, want)
		}
	}
	waitCaughtUp(t, p)
	for _, id := range []string{"eight", "word", "exponent"} {
		if s, _, _ := treesearch.Get(p.Store, "project:a/"+id); s.Status != treesearch.StatusPaused || len(s.Decisions) != 0 {
			t.Errorf("%s after the refused batch: %s with %d decisions; want paused, none", id, s.Status, len(s.Decisions))
		}
		if _, ok, _ := treesearch.Get(p.Store, "project:a/elsewhere-"+id); ok {
			t.Errorf("the search started in the refused batch of %s was written", id)
		}
	}
}
