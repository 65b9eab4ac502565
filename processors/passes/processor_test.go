package passes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// passEvent is a valid reasoning.pass.completed.v1 of task in scope.
func passEvent(t testing.TB, scope, id string, d events.ReasoningPassData) events.Envelope {
	t.Helper()
	env, err := events.New(events.ReasoningPassCompleted, "test/passes", id, base.Add(time.Duration(d.PassNumber)*time.Minute), d)
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = scope
	if err := events.Validate(&env); err != nil {
		t.Fatal(err)
	}
	return env
}

func openStore(t *testing.T) *projections.Store {
	t.Helper()
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func apply(s *projections.Store, off int64, env *events.Envelope) error {
	_, err := s.Apply(Name, projections.Position{Topic: string(events.TopicReasoning), Offset: off}, env, Processor{}.Apply)
	return err
}

// threePasses is a task of three passes: a plan, a refinement that nests
// a step, a profile update after a failed convergence with validation
// issues, and a last pass that converges.
func threePasses(t testing.TB, scope, task string) []events.Envelope {
	used := 4
	deep := events.DefaultTaskProfile()
	deep.ReasoningDepth = 5
	return []events.Envelope{
		passEvent(t, scope, task+"-1", events.ReasoningPassData{TaskID: task, Task: "Which band?", PassNumber: 1, Phase: "C", TTLRemaining: 2, TTLUsed: &used,
			Plan:             &events.Plan{Steps: []events.PlanStep{{StepID: "search", Description: "search the band"}, {StepID: "answer", Description: "answer"}}},
			StepsExecuted:    []events.ExecutedStep{{StepIndex: 1, TotalSteps: 2, Thought: "look", Tool: "Search", Input: "Creed", Observation: "a statement of beliefs"}},
			Convergence:      events.ConvergenceScores{Completeness: 0.5, Coherence: 0.95, Consistency: 1},
			ValidationIssues: []events.ValidationIssue{{Code: "AMBIGUOUS_ENTITY", Severity: "warning", StepID: "search"}}, Output: "1994"}),
		passEvent(t, scope, task+"-2", events.ReasoningPassData{TaskID: task, PassNumber: 2, Phase: "D", Status: events.PassTTLExhausted, TTLRemaining: 0, Profile: &deep, ProfileSource: "updated",
			RefinementActions: []events.RefinementAction{{Type: events.RefineAdd, Target: "disambiguate", Changes: &events.StepChanges{ParentID: str("search"), Description: str("search Creed (band)")}}},
			Convergence:       events.ConvergenceScores{Completeness: 0.9, Coherence: 0.95, Consistency: 0.95}}),
		passEvent(t, scope, task+"-3", events.ReasoningPassData{TaskID: task, PassNumber: 3, Phase: "C", TTLRemaining: 3,
			RefinementActions: []events.RefinementAction{{Type: events.RefineModify, Target: "answer", Changes: &events.StepChanges{Description: str("answer with the year")}}},
			Convergence:       events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 0.95, Consistency: 0.92}, Output: "2004"}),
	}
}

func TestHistoryPlanVerdictsAndProfile(t *testing.T) {
	s := openStore(t)
	for i, e := range threePasses(t, "project:a", "q/1") {
		if err := apply(s, int64(i), &e); err != nil {
			t.Fatal(err)
		}
	}
	key := events.EntityKey("project:a", "q/1")
	task, ok, err := Get(s, key)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if task.Passes != 3 || task.Status != TaskConverged || task.ConvergedPass != 3 || task.Output != "2004" || task.Task != "Which band?" || task.ProfileChanges != 1 || task.Refinements != 2 {
		t.Fatalf("task %+v", task)
	}
	h, err := History(s, key)
	if err != nil || len(h) != 3 {
		t.Fatal(len(h), err)
	}
	if h[0].ProfileSource != "default" || h[0].TTL != (TTLState{Allocated: 6, Used: 4, Remaining: 2}) || h[0].Verdict.Converged ||
		strings.Join(h[0].Verdict.ReasonCodes, ",") != ReasonIncomplete || ids(h[0].Plan) != "search@1#1/2 answer@1#2/2" {
		t.Fatalf("pass 1 %+v", h[0])
	}
	// pass 2: deeper profile (justified: pass 1 failed with issues), TTL
	// from the new profile, exhausted, and the nested step
	if h[1].ProfileChange == nil || !h[1].ProfileChange.Justified || h[1].TTL != (TTLState{Allocated: 10, Used: 10, Remaining: 0, Exhausted: true}) ||
		ids(h[1].Plan) != "search@1#1/3 disambiguate@2#2/3 answer@1#3/3" || !strings.Contains(strings.Join(h[1].Verdict.ReasonCodes, ","), ReasonTTLExhausted) {
		t.Fatalf("pass 2 %+v", h[1])
	}
	// pass 3 keeps the updated profile and the plan, converges
	if h[2].Profile.ReasoningDepth != 5 || h[2].ProfileChange != nil || !h[2].Verdict.Converged || h[2].Plan.Steps[2].Description != "answer with the year" || h[2].PlanGenerated {
		t.Fatalf("pass 3 %+v", h[2])
	}
	// the same id in another scope is another task
	if _, ok, _ := Get(s, events.EntityKey("project:b", "q/1")); ok {
		t.Fatal("project:b holds project:a's task")
	}
	if sc, _ := Scopes(s, "q/1"); fmt.Sprint(sc) != "[project:a]" {
		t.Fatalf("scopes %v", sc)
	}
	// a prefix of the id is another task, whose passes are not these
	if h, _ := History(s, events.EntityKey("project:a", "q")); len(h) != 0 {
		t.Fatalf("task q sees q/1's passes: %d", len(h))
	}
}

func TestRejectionsNameTheField(t *testing.T) {
	s := openStore(t)
	evs := threePasses(t, "project:a", "t")
	if err := apply(s, 0, &evs[0]); err != nil {
		t.Fatal(err)
	}
	// pass 1 again under another event id
	again := evs[0]
	again.ID = "other"
	err := apply(s, 2, &again)
	var re *RejectError
	if !errors.As(err, &re) || re.Pointer != "/data/pass_number" || !strings.Contains(re.Reason, "already recorded") || !projections.Deterministic(err) {
		t.Fatalf("repeat: %v", err)
	}
	// a refinement naming an unknown step changes nothing
	bad := passEvent(t, "project:a", "bad-2", events.ReasoningPassData{TaskID: "t", PassNumber: 2, Phase: "B", TTLRemaining: 1,
		RefinementActions: []events.RefinementAction{add("x", "", "X"), {Type: events.RefineRemove, Target: "ghost"}},
		Convergence:       events.ConvergenceScores{Completeness: 1, Coherence: 1, Consistency: 1}})
	if err := apply(s, 3, &bad); !errors.As(err, &re) || re.Pointer != "/data/refinement_actions/1/target" {
		t.Fatalf("unknown step: %v", err)
	}
	task, _, _ := Get(s, events.EntityKey("project:a", "t"))
	if task.Passes != 1 || len(task.Plan.Steps) != 2 {
		t.Fatalf("a rejected pass changed the task: %+v", task)
	}
	// pass 3 is accepted, flagged with the missing pass 2; pass 2 is then
	// too late
	if err := apply(s, 4, &evs[2]); err != nil {
		t.Fatal(err)
	}
	h, _ := History(s, events.EntityKey("project:a", "t"))
	if len(h) != 2 || h[1].PassNumber != 3 || fmt.Sprint(h[1].MissingBefore) != "[2]" {
		t.Fatalf("history after a gap: %+v", h)
	}
	if err := apply(s, 5, &evs[1]); !errors.As(err, &re) || re.Pointer != "/data/pass_number" {
		t.Fatalf("late pass 2: %v", err)
	}
	task, _, _ = Get(s, events.EntityKey("project:a", "t"))
	if task.Passes != 3 || task.Recorded != 2 {
		t.Fatalf("task after a gap %+v", task)
	}
}

// TestLatePassIsNotCalledRecorded: a pass skipped over (pass 3 recorded
// after pass 1) and sent afterwards is rejected as not above the last
// pass, not as "already recorded", which it never was (found by a new
// user's walkthrough).
func TestLatePassIsNotCalledRecorded(t *testing.T) {
	s := openStore(t)
	evs := threePasses(t, "project:a", "t")
	if err := apply(s, 0, &evs[0]); err != nil {
		t.Fatal(err)
	}
	if err := apply(s, 1, &evs[2]); err != nil {
		t.Fatal(err)
	}
	err := apply(s, 2, &evs[1])
	var re *RejectError
	if !errors.As(err, &re) || re.Pointer != "/data/pass_number" || strings.Contains(re.Reason, "already recorded") || !strings.Contains(re.Reason, "not above the last recorded pass 3") {
		t.Fatalf("late pass 2: %v", err)
	}
}

// TestPassGapIsBounded: a pass skipping MaxPassGap numbers is accepted
// and flagged with all of them; one skipping more is rejected, naming
// the field, and changes nothing (pass_number 100,000,000 built a list of
// that many numbers and ran the service out of memory, at every restart:
// a walkthrough found).
func TestPassGapIsBounded(t *testing.T) {
	s := openStore(t)
	evs := threePasses(t, "project:a", "t")
	if err := apply(s, 0, &evs[0]); err != nil {
		t.Fatal(err)
	}
	d := events.ReasoningPassData{TaskID: "t", PassNumber: 2 + MaxPassGap + 1, Phase: "C", TTLRemaining: 3,
		Convergence: events.ConvergenceScores{Completeness: 1, Coherence: 1, Consistency: 1}}
	beyond := passEvent(t, "project:a", "beyond", d)
	var re *RejectError
	if err := apply(s, 1, &beyond); !errors.As(err, &re) || re.Pointer != "/data/pass_number" {
		t.Fatalf("a gap of MaxPassGap+1: %v", err)
	}
	d.PassNumber = 100_000_000
	far := passEvent(t, "project:a", "far", d)
	err := apply(s, 2, &far)
	if !errors.As(err, &re) || re.Pointer != "/data/pass_number" || !strings.Contains(re.Reason, "99999998 passes missing after pass 1") || !projections.Deterministic(err) {
		t.Fatalf("pass 100000000 after pass 1: %v", err)
	}
	d.PassNumber = 2 + MaxPassGap
	edge := passEvent(t, "project:a", "edge", d)
	if err := apply(s, 3, &edge); err != nil {
		t.Fatalf("a gap of MaxPassGap: %v", err)
	}
	h, _ := History(s, events.EntityKey("project:a", "t"))
	if len(h) != 2 || len(h[1].MissingBefore) != MaxPassGap || h[1].MissingBefore[0] != 2 || h[1].MissingBefore[MaxPassGap-1] != 1+MaxPassGap {
		t.Fatalf("history: %d passes, the last missing %d", len(h), len(h[len(h)-1].MissingBefore))
	}
}

// A task's passes past pass 999,999 are read in order: their rows' keys
// sort numerically (projections.SeqKey). With %06d, pass 1,000,000 sorted
// between passes 100,000 and 100,001, so History listed it there and a
// page after 999,900 skipped it (10,000 passes at the MaxPassGap bound
// reach it).
func TestPassesPastAMillionStayInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 passes")
	}
	s := openStore(t)
	key := events.EntityKey("project:a", "long")
	var nums []int
	for n, off := 1, int64(0); n <= 1_000_000+2*MaxPassGap; n, off = n+MaxPassGap, off+1 {
		d := events.ReasoningPassData{TaskID: "long", PassNumber: n, Phase: "C", TTLRemaining: 3,
			Convergence: events.ConvergenceScores{Completeness: 0.5, Coherence: 0.5, Consistency: 0.5}}
		if n == 1 {
			d.Task = "a long task"
		}
		env := passEvent(t, "project:a", fmt.Sprintf("long-%d", n), d)
		if err := apply(s, off, &env); err != nil {
			t.Fatalf("pass %d: %v", n, err)
		}
		nums = append(nums, n)
	}
	h, err := History(s, key)
	if err != nil || len(h) != len(nums) {
		t.Fatalf("History: %d passes, %v; want %d", len(h), err, len(nums))
	}
	for i, p := range h {
		if p.PassNumber != nums[i] {
			t.Fatalf("History[%d] is pass %d, want %d", i, p.PassNumber, nums[i])
		}
	}
	page, more, err := HistoryPage(s, key, 999_901, 0, 0)
	if err != nil || more || len(page) != 2 || page[0].PassNumber != 1_000_001 || page[1].PassNumber != 1_000_101 {
		t.Fatalf("the page after pass 999,901: %d passes (%v), more %v, %v; want 1,000,001 and 1,000,101", len(page), passNumbers(page), more, err)
	}
}

func passNumbers(ps []Pass) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PassNumber
	}
	return out
}
