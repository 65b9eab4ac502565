package treesearch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections"
)

// store applies events straight through the processor's Apply path, at
// consecutive offsets, as the live runner and replay do.
type store struct {
	t   *testing.T
	s   *projections.Store
	off int64
}

func newStore(t *testing.T) *store {
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &store{t: t, s: s}
}

func (st *store) apply(typ events.Type, payload any) error {
	st.t.Helper()
	env, err := events.New(typ, "test", fmt.Sprintf("e%d", st.off), time.Unix(1700000000+st.off, 0), payload)
	if err != nil {
		st.t.Fatal(err)
	}
	env.Scope = "project:a"
	if err := events.Validate(&env); err != nil {
		st.t.Fatalf("%s invalid: %v", typ, err)
	}
	_, err = st.s.Apply(treesearch.Name, projections.Position{Topic: string(events.TopicSearches), Offset: st.off}, &env, treesearch.Processor{}.Apply)
	st.off++
	return err
}

func (st *store) must(typ events.Type, payload any) {
	st.t.Helper()
	if err := st.apply(typ, payload); err != nil {
		st.t.Fatalf("%s: %v", typ, err)
	}
}

func (st *store) get() treesearch.Search {
	st.t.Helper()
	s, ok, err := treesearch.Get(st.s, events.EntityKey("project:a", "s1"))
	if err != nil || !ok {
		st.t.Fatalf("search: %v %v", ok, err)
	}
	return s
}

func f64(v float64) *float64 { return &v }
func str(s string) *string   { return &s }

func child(id string, depth int, state string, g, h float64) events.SearchNodeData {
	parent := "r"
	if i := strings.LastIndex(id, "."); i > 0 {
		parent = id[:i]
	}
	score := 1 - h
	h = 1 - score // as the runner computes it
	return events.SearchNodeData{SearchID: "s1", NodeID: id, ParentID: &parent, Expansion: 1, Depth: depth, State: state,
		StateDigest: treesearch.Digest(state), Candidate: "step to " + state, G: g, H: f64(h), F: f64(g + h), Score: &score}
}

func started(st *store, beam int, quota int64) {
	st.must(events.SearchStarted, events.SearchStartedData{SearchID: "s1", Goal: "obtain 24", RootState: "root",
		Config:   events.SearchConfig{BeamWidth: beam, K: 8, MaxDepth: 4, QuotaTokens: quota, CostPerStep: 0.25},
		Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}})
}

func rejected(t *testing.T, err error, pointer string) {
	t.Helper()
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != pointer {
		t.Fatalf("want a rejection naming %s, got %v", pointer, err)
	}
}

// Priority-queue order: the open set is ordered by f, ties by node id;
// the beam keeps the W best and drops the rest; node rows round-trip
// (h = ∞ as null).
func TestFrontierOrderAndBeam(t *testing.T) {
	st := newStore(t)
	started(st, 2, 0)
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	st.must(events.SearchNodeExpanded, child("r.0", 1, "a", 0.25, 0.5))
	st.must(events.SearchNodeExpanded, child("r.1", 1, "b", 0.25, 0.25))
	st.must(events.SearchNodeExpanded, child("r.2", 1, "c", 0.25, 0.5)) // ties with r.0: r.0 first
	hard := child("r.3", 1, "d", 0.25, 0)
	hard.H, hard.F, hard.Score, hard.HardFail, hard.PrunedReason, hard.Report = nil, nil, nil, true, str(events.PrunedHardCheck), "5 + 5 is 10, not 11"
	st.must(events.SearchNodeExpanded, hard)
	// the beam of W = 2 is r.1 (f 0.5), r.0 (f 0.75, before r.2 by id)
	err := st.apply(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0", "r.1", "r.2", "r.3"}, Kept: []string{"r.1", "r.2"}, Dropped: []string{"r.0"}, TokensUsed: 60, TokensRefunded: 40})
	rejected(t, err, "/data/kept")
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0", "r.1", "r.2", "r.3"}, Kept: []string{"r.1", "r.0"}, Dropped: []string{"r.2"}, TokensUsed: 60, TokensRefunded: 40})
	s := st.get()
	if got := fmt.Sprint(s.Open); got != "[{r.1 0.5 2 1 false false} {r.0 0.75 1 1 false false}]" {
		t.Fatalf("open set %s", got)
	}
	if s.Counts.HardFailed != 1 || s.Counts.BeamDropped != 1 || s.Counts.EvaluatorCalls != 3 || s.Expansions != 1 {
		t.Fatalf("counts %+v", s.Counts)
	}
	key := s.Key()
	n, _, _ := treesearch.GetNode(st.s, key, "r.3")
	b, _ := json.Marshal(n)
	if !strings.Contains(string(b), `"h":null`) || !strings.Contains(string(b), `"f":null`) || !n.HardFail || n.Status != treesearch.NodePruned {
		t.Fatalf("hard-failed node %s", b)
	}
	if n, _, _ := treesearch.GetNode(st.s, key, "r.2"); n.Status != treesearch.NodeDropped {
		t.Fatalf("r.2 %+v", n)
	}
	// the next expansion must take the head of the open set
	err = st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: 10})
	rejected(t, err, "/data/node_id")
	// a duplicate must be declared as one, and is killed without a score
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.1", Tokens: 10})
	d := child("r.1.0", 2, "a", 0.5, 0.1)
	d.Expansion = 2
	rejected(t, st.apply(events.SearchNodeExpanded, d), "/data/pruned_reason")
	d.H, d.F, d.Score, d.PrunedReason, d.DuplicateOf = nil, nil, nil, str(events.PrunedDuplicate), "r.0"
	st.must(events.SearchNodeExpanded, d)
	if s := st.get(); s.Counts.Duplicates != 1 || s.Counts.EvaluatorCalls != 3 {
		t.Fatalf("after a duplicate: %+v", s.Counts)
	}
}

// Quota: a reservation that would breach the quota is refused at reserve
// time naming /data/tokens; reserve → reconcile is exact (refund and
// overrun), and the invariant reserved = used − overrun + refunded +
// outstanding holds after every event.
func TestQuotaBreachRefusedAtReserve(t *testing.T) {
	st := newStore(t)
	started(st, 3, 1000)
	check := func() {
		q := st.get().Quota
		if q.Reserved != q.Used-q.Overrun+q.Refunded+q.Outstanding {
			t.Fatalf("quota arithmetic broken: %+v", q)
		}
	}
	rejected(t, st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 1001}), "/data/tokens")
	if q := st.get().Quota; q.Reserved != 0 || q.Outstanding != 0 {
		t.Fatalf("a refused reservation changed the quota: %+v", q)
	}
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 700})
	check()
	st.must(events.SearchNodeExpanded, child("r.0", 1, "a", 0.25, 0.5))
	rejected(t, st.apply(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 650, TokensRefunded: 40}), "/data/tokens_refunded")
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 650, TokensRefunded: 50})
	check()
	// 650 used: 351 more would breach 1000, 350 fits; so would 2^63 − 1 − 649
	// (used + it wraps past the largest int64 to a negative sum: it was
	// accepted, a walkthrough found)
	rejected(t, st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: 351}), "/data/tokens")
	rejected(t, st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: math.MaxInt64 - 649}), "/data/tokens")
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: 350})
	check()
	// a used count past the largest int64 is refused (it wrapped to a
	// negative count, after which any reservation fit)
	rejected(t, st.apply(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 2, NodeID: "r.0",
		Children: []string{}, Kept: []string{}, Dropped: []string{}, TokensUsed: math.MaxInt64 - 649, TokensOverrun: math.MaxInt64 - 649 - 350}), "/data/tokens_used")
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 2, NodeID: "r.0",
		Children: []string{}, Kept: []string{}, Dropped: []string{}, TokensUsed: 400, TokensRefunded: 0, TokensOverrun: 50})
	check()
	q := st.get().Quota
	if q.Used != 1050 || q.Refunded != 50 || q.Overrun != 50 || q.Outstanding != 0 || q.Reserved != 1050 {
		t.Fatalf("quota %+v", q)
	}
	rejected(t, st.apply(events.SearchCompleted, events.SearchCompletedData{SearchID: "s1", Outcome: events.SearchMaxExpansions}), "/data/outcome")
	st.must(events.SearchCompleted, events.SearchCompletedData{SearchID: "s1", Outcome: events.SearchExhausted})
	rejected(t, st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 3, NodeID: "r.0", Tokens: 1}), "/type")
}

// A quota_exhausted completion names the reservation the quota refused,
// and one that fits the quota is refused: before, a search with its quota
// untouched could be completed quota_exhausted (a walkthrough). A
// completion without refused_tokens (a log written before it existed) is
// taken as before.
func TestQuotaExhaustedNamesTheRefusedReservation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused int64
		outcome string
		reject  string
	}{
		{"fits", 1000, events.SearchQuotaExhausted, "/data/refused_tokens"},
		{"breaches", 1001, events.SearchQuotaExhausted, ""},
		{"on another outcome", 1001, events.SearchExhausted, "/data/refused_tokens"},
		{"left out", 0, events.SearchQuotaExhausted, ""},
		{"largest", math.MaxInt64, events.SearchQuotaExhausted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			started(st, 3, 1000)
			if tc.outcome == events.SearchExhausted {
				st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 700})
				st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
					Children: []string{}, Kept: []string{}, Dropped: []string{}, TokensUsed: 600, TokensRefunded: 100})
			}
			err := st.apply(events.SearchCompleted, events.SearchCompletedData{SearchID: "s1", Outcome: tc.outcome, RefusedTokens: tc.refused})
			if tc.reject != "" {
				rejected(t, err, tc.reject)
				if s := st.get(); s.Status == treesearch.StatusCompleted {
					t.Fatalf("completed by a refused event: %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := st.get(); s.Outcome != tc.outcome || s.Quota.Refused != tc.refused {
				t.Fatalf("outcome %s refused %d, want %s %d", s.Outcome, s.Quota.Refused, tc.outcome, tc.refused)
			}
		})
	}
}

// Pause and resume: a node that needs a human pauses the search with its
// frontier saved; the human's decision is recorded and reject prunes the
// node.
func TestPauseAndResume(t *testing.T) {
	st := newStore(t)
	started(st, 3, 1000)
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 0})
	a := child("r.0", 1, "a", 0.25, 0)
	a.NeedsHuman = true
	st.must(events.SearchNodeExpanded, a)
	st.must(events.SearchNodeExpanded, child("r.1", 1, "b", 0.25, 0.5))
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0", "r.1"}, Kept: []string{"r.0", "r.1"}, Dropped: []string{}, TokensUsed: 0, TokensRefunded: 0})
	rejected(t, st.apply(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: 0}), "/data/node_id")
	rejected(t, st.apply(events.SearchPaused, events.SearchPausedData{SearchID: "s1", NodeID: "r.1", Question: "?"}), "/data/node_id")
	st.must(events.SearchPaused, events.SearchPausedData{SearchID: "s1", NodeID: "r.0", Question: "may it use 4 twice?"})
	if s := st.get(); s.Status != treesearch.StatusPaused || len(s.Open) != 2 {
		t.Fatalf("paused %+v", s)
	}
	// a paused search waits for its human: no outcome skips the decision
	// (quota_exhausted was accepted with the quota unused, a walkthrough
	// found)
	for _, o := range []string{events.SearchQuotaExhausted, events.SearchMaxExpansions, events.SearchExhausted, events.SearchSolved} {
		d := events.SearchCompletedData{SearchID: "s1", Outcome: o}
		if o == events.SearchSolved {
			d.NodeID, d.Path, d.Answer = "r.0", []string{"r", "r.0"}, "24"
		}
		rejected(t, st.apply(events.SearchCompleted, d), "/type")
	}
	st.must(events.SearchResumed, events.SearchResumedData{SearchID: "s1", Decision: "reject", Note: "no", By: "ana"})
	s := st.get()
	if s.Status != treesearch.StatusRunning || len(s.Open) != 1 || s.Open[0].ID != "r.1" || len(s.Decisions) != 1 || s.Decisions[0].Question != "may it use 4 twice?" {
		t.Fatalf("resumed %+v", s)
	}
	rejected(t, st.apply(events.SearchResumed, events.SearchResumedData{SearchID: "s1", Decision: "approve"}), "/type")
}

// A goal the evaluator marks needs_human waits for the human like any
// other such node: search.completed.v1 solved on it is refused, naming the
// node, until the search is paused there and resumed approved (before, it
// completed the search solved and no human was asked: a tree-search
// walkthrough, 2026-12-07); rejected, it is pruned and the search goes on.
func TestGoalThatNeedsAHumanIsNotCompletedWithoutOne(t *testing.T) {
	solved := events.SearchCompletedData{SearchID: "s1", Outcome: events.SearchSolved, NodeID: "r.0", Path: []string{"r", "r.0"}, Answer: "24"}
	expand := func(st *store) {
		started(st, 3, 0)
		st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 0})
		goal := child("r.0", 1, "24", 0.25, 0)
		goal.Goal, goal.NeedsHuman = true, true
		st.must(events.SearchNodeExpanded, goal)
		st.must(events.SearchNodeExpanded, child("r.1", 1, "b", 0.25, 0.5))
		st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
			Children: []string{"r.0", "r.1"}, Kept: []string{"r.0", "r.1"}, Dropped: []string{}})
	}
	st := newStore(t)
	expand(st)
	rejected(t, st.apply(events.SearchCompleted, solved), "/data/node_id")
	if s := st.get(); s.Status != treesearch.StatusRunning {
		t.Fatalf("a refused completion changed the search: %+v", s)
	}
	st.must(events.SearchPaused, events.SearchPausedData{SearchID: "s1", NodeID: "r.0", Question: "is this answer acceptable?"})
	st.must(events.SearchResumed, events.SearchResumedData{SearchID: "s1", Decision: "approve", By: "ana"})
	st.must(events.SearchCompleted, solved)
	if s := st.get(); s.Outcome != events.SearchSolved || s.GoalNode != "r.0" || len(s.Decisions) != 1 {
		t.Fatalf("approved goal: %+v", s)
	}

	st = newStore(t)
	expand(st)
	st.must(events.SearchPaused, events.SearchPausedData{SearchID: "s1", NodeID: "r.0", Question: "is this answer acceptable?"})
	st.must(events.SearchResumed, events.SearchResumedData{SearchID: "s1", Decision: "reject", By: "ana"})
	rejected(t, st.apply(events.SearchCompleted, solved), "/data/node_id")
	if s := st.get(); len(s.Open) != 1 || s.Open[0].ID != "r.1" {
		t.Fatalf("rejected goal: open %+v", s.Open)
	}
}

// A search event carrying a sessionid is still keyed by its search (scope
// and search_id) and lives on chronicle.searches, so it never reaches the
// sessions processor or creates a session.
func TestNodeEventsNeverCreateASession(t *testing.T) {
	for _, typ := range []events.Type{events.SearchStarted, events.SearchQuotaReserved, events.SearchNodeExpanded, events.SearchFrontierDecided,
		events.SearchPaused, events.SearchResumed, events.SearchCompleted} {
		ti, _ := events.Lookup(typ)
		if ti.Topic != events.TopicSearches {
			t.Errorf("%s on %s", typ, ti.Topic)
		}
	}
	env, _ := events.New(events.SearchNodeExpanded, "t", "1", time.Now(), map[string]any{"search_id": "s1"})
	env.SessionID, env.Scope = "sess-1", "project:a"
	if k, err := events.Key(&env); err != nil || k != "project:a/s1" {
		t.Fatalf("key %q %v", k, err)
	}
	if err := events.CheckTopic(&env, events.TopicSessions); err == nil {
		t.Fatal("a search event on chronicle.sessions must be refused (dead-lettered), not projected as a session")
	}
}

// A producer's f = g + h and h = 1 − score are compared up to
// floating-point rounding: g 0.1, score 0.8, h 0.2, f 0.3 as written in
// decimal is the sum float64 makes 0.30000000000000004 (and 1 − 0.8
// 0.19999999999999996); before, such a node was dead-lettered and the
// expansion's frontier decision after it too. A real difference is still
// refused.
func TestDecimalFAndHAreAccepted(t *testing.T) {
	st := newStore(t)
	// g 0.1 at depth 1: cost_per_step 0.1 (g = depth × cost_per_step)
	st.must(events.SearchStarted, events.SearchStartedData{SearchID: "s1", Goal: "obtain 24", RootState: "root",
		Config:   events.SearchConfig{BeamWidth: 2, K: 8, MaxDepth: 4, CostPerStep: 0.1},
		Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}})
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	n := child("r.0", 1, "a", 0.1, 0.2)
	n.Score, n.H, n.F = f64(0.8), f64(0.2), f64(0.3)
	st.must(events.SearchNodeExpanded, n)
	off := child("r.1", 1, "b", 0.1, 0.2)
	off.Score, off.H, off.F = f64(0.8), f64(0.2), f64(0.3001)
	rejected(t, st.apply(events.SearchNodeExpanded, off), "/data/f")
	off.F, off.H = f64(0.31), f64(0.21)
	err := st.apply(events.SearchNodeExpanded, off)
	rejected(t, err, "/data/h")
	// the reason gives 1 − 0.8 as 0.2, not float64's 0.19999999999999996
	if !strings.Contains(err.Error(), "0.21 is not 1 − score = 0.2") {
		t.Errorf("reason %q; want it to say 0.21 is not 1 − score = 0.2", err)
	}
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 10, TokensRefunded: 90})
	if s := st.get(); len(s.Open) != 1 || s.Open[0].ID != "r.0" || s.Open[0].F != 0.3 {
		t.Fatalf("open set %+v", s.Open)
	}
}

// g + h that overflows float64 is refused: events.CloseEnough(f, +Inf) held for
// any f, so a node with g = h = 1e308 and f = 0 was accepted and led the
// open set (a walkthrough).
func TestOverflowingFIsRefused(t *testing.T) {
	st := newStore(t)
	started(st, 2, 0)
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	n := child("r.0", 1, "a", 1e308, 0.2)
	n.Score, n.H, n.F = nil, f64(1e308), f64(0)
	rejected(t, st.apply(events.SearchNodeExpanded, n), "/data/h")
	n.F = f64(math.MaxFloat64)
	rejected(t, st.apply(events.SearchNodeExpanded, n), "/data/h")
	if s := st.get(); s.Counts.Nodes != 0 {
		t.Fatalf("counts %+v", s.Counts)
	}
}

// max_depth is checked as max_expansions is: a node at max_depth is not
// expanded (events.SearchConfig), so a child below it is refused naming
// /data/depth; before, it was applied and joined the open set.
func TestChildBeyondMaxDepthIsRefused(t *testing.T) {
	st := newStore(t)
	st.must(events.SearchStarted, events.SearchStartedData{SearchID: "s1", Goal: "obtain 24", RootState: "root",
		Config:   events.SearchConfig{BeamWidth: 2, K: 8, MaxDepth: 1, CostPerStep: 0.25},
		Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}})
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	st.must(events.SearchNodeExpanded, child("r.0", 1, "a", 0.25, 0.5))
	st.must(events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "s1", Expansion: 1, NodeID: "r",
		Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 10, TokensRefunded: 90})
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 2, NodeID: "r.0", Tokens: 100})
	deep := child("r.0.0", 2, "b", 0.5, 0.5)
	deep.Expansion = 2
	rejected(t, st.apply(events.SearchNodeExpanded, deep), "/data/depth")
	if s := st.get(); s.Counts.Nodes != 1 {
		t.Fatalf("counts %+v", s.Counts)
	}
}

// A correction whose corrected document is sent as a JSON string holding
// it is refused saying so (the reason quoted the very document, which
// looked like a match: a walkthrough); sent as the document, it applies.
func TestCorrectionSentAsAStringIsNamed(t *testing.T) {
	st := newStore(t)
	st.must(events.SearchBranchCompleted, events.SearchBranchData{SearchID: "p1", BranchID: "b1", Output: `{"ans":"6*4"}`, Answer: "6*4"})
	c := events.SearchCorrectionData{SearchID: "p1", BranchID: "b1", Schema: "answer",
		Patch: json.RawMessage(`[{"op":"move","from":"/ans","path":"/answer"}]`), Corrected: json.RawMessage(`"{\"answer\":\"6*4\"}"`)}
	err := st.apply(events.SearchCandidateCorrected, c)
	rejected(t, err, "/data/corrected")
	if !strings.Contains(err.Error(), "JSON string holding") {
		t.Fatalf("reason: %v", err)
	}
	c.Corrected = json.RawMessage(`{"answer":"6*4"}`)
	st.must(events.SearchCandidateCorrected, c)
}

// A node sent with "state": "" is the empty state, and a node id is an id
// (events.CheckID), and any state sent comes with its own digest:
// producers are refused, naming /data/state_digest and
// /data/node_id (any digest and "r 0" were taken: a walkthrough,
// 2026-11-30). The processor applies such records as it did, so a log
// written before replays as it did (an upgrade walkthrough found searches
// lost on a rebuild when the processor refused them too); a node without
// state keeps it to itself, its digest checked for its form only (a
// SHA-256, 64 lower-case hex digits) and by the processor taken as sent.
func TestNodeChecksAreTheProducers(t *testing.T) {
	asMap := func(d events.SearchNodeData) map[string]any {
		b, _ := json.Marshal(d)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	produced := func(payload any) error {
		env, err := events.New(events.SearchNodeExpanded, "test", "n1", time.Unix(1700000000, 0), payload)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		raw, err := events.Marshal(&env)
		if err != nil {
			t.Fatal(err)
		}
		_, err = events.ParseProducerEvent(raw)
		return err
	}
	empty := asMap(child("r.0", 1, "", 0.25, 0.5))
	empty["state"], empty["state_digest"] = "", "not-the-digest"
	rejected(t, produced(empty), "/data/state_digest")
	// a state sent with another digest: refused at the producer too, as
	// the processor refuses it (it was a 202, then a dead letter: a
	// walkthrough, 2026-11-30)
	wrong := asMap(child("r.0", 1, "4 4 5", 0.25, 0.5))
	wrong["state_digest"] = "abc"
	rejected(t, produced(wrong), "/data/state_digest")
	if err := produced(child("r.0", 1, "4 4 5", 0.25, 0.5)); err != nil {
		t.Fatalf("a state with its digest: %v", err)
	}
	for _, id := range []string{"r.0\n", "r 0", "r.\x00"} {
		rejected(t, produced(child(id, 1, "a", 0.25, 0.5)), "/data/node_id")
	}
	ok := asMap(child("r.0", 1, "", 0.25, 0.5))
	ok["state"], ok["state_digest"] = "", treesearch.Digest("")
	if err := produced(ok); err != nil {
		t.Fatalf("the empty state with its digest: %v", err)
	}
	private := asMap(child("r.1", 1, "", 0.25, 0.5))
	delete(private, "state")
	private["state_digest"] = treesearch.Digest("a private state")
	if err := produced(private); err != nil {
		t.Fatalf("a node without state: %v", err)
	}
	// a digest sent without state is a SHA-256 as Digest writes it: any
	// other string was taken (a tree-search walkthrough, 2026-12-07); a
	// log holding one replays as it did (applied below)
	private["state_digest"] = "a-digest-of-a-private-state"
	rejected(t, produced(private), "/data/state_digest")
	// the processor: a log written before replays as it did
	st := newStore(t)
	started(st, 3, 0)
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	st.must(events.SearchNodeExpanded, empty)
	st.must(events.SearchNodeExpanded, child("r 1", 1, "b", 0.25, 0.5))
	st.must(events.SearchNodeExpanded, private)
}

// g is depth × cost_per_step (the search's config; 0.25 here), up to
// events.CloseEnough: a node whose g differs is refused naming /data/g,
// pruned or not; before, any g was taken and set the node's f, so its
// place in the open set (a tree-search walkthrough, 2026-12-07).
func TestGIsDepthTimesCostPerStep(t *testing.T) {
	st := newStore(t)
	started(st, 2, 0)
	st.must(events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "s1", Expansion: 1, NodeID: "r", Tokens: 100})
	cheap := child("r.0", 1, "a", 0, 0.5) // f 0.5 would lead the open set
	err := st.apply(events.SearchNodeExpanded, cheap)
	rejected(t, err, "/data/g")
	if !strings.Contains(err.Error(), "0 is not depth × cost_per_step = 1 × 0.25 = 0.25") {
		t.Errorf("reason %q; want it to name depth × cost_per_step", err)
	}
	pruned := child("r.0", 1, "a", 0.5, 0)
	pruned.H, pruned.F, pruned.Score, pruned.PrunedReason = nil, nil, nil, str(events.PrunedPrefilter)
	rejected(t, st.apply(events.SearchNodeExpanded, pruned), "/data/g")
	// rounding is no difference: 0.25 written as 0.25000000000000001
	near := child("r.0", 1, "a", 0.25+1e-12, 0.5)
	st.must(events.SearchNodeExpanded, near)
	if s := st.get(); s.Counts.Nodes != 1 {
		t.Fatalf("counts %+v", s.Counts)
	}
}
