// Package passes is the processor of the reasoning family: it projects,
// per reasoning task, the execution history of the adaptive multi-pass
// reasoning engine from reasoning.pass.completed.v1 (topic
// chronicle.reasoning, keyed by the task's events.EntityKey): the passes in
// order with their phase, TaskProfile, TTL allocated/used/remaining, the
// plan as it stands after each pass's refinement actions (Refine, a
// deterministic reducer over ADD/MODIFY/REMOVE), the steps executed, the
// convergence verdict by the design's thresholds (Judge) with reason codes,
// validation issues and TaskProfile changes.
//
// Rejections (dead-lettered with a reason naming the field): a pass number
// not above the last recorded one, or more than MaxPassGap above it
// (/data/pass_number), a refinement
// that breaks a limit of the design (nesting > 5, > 3 attempts on one
// fragment or > 10 in a pass) or names an unknown step id
// (/data/refinement_actions/<i>/target), a plan snapshot with a duplicate
// id or unknown parent. A rejected pass changes nothing. Accepted and
// flagged: a pass whose number skips some (Pass.MissingBefore: a log
// without that trial, or a rejected pass), a TaskProfile update without
// the previous pass having failed convergence with validation issues
// (ProfileChange.Justified false), and an engine's converged flag that
// differs from the thresholds (CLAIM_DISAGREES).
//
// Projection rows (under p/passes/):
//
//	t/<key>                    Task: the task's current state (JSON)
//	p/<key>\x00<pass, 6 digits> Pass: one pass's record (JSON)
//	i/<task id>\x00<scope>     index from a bare id to the scopes that hold it
package passes

import (
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "passes"

// Task statuses: converged (the last pass converged), ttl_exhausted (the
// last pass ran out of TTL without converging), failed (the last pass
// ended with an error), open otherwise.
const (
	TaskOpen         = "open"
	TaskConverged    = "converged"
	TaskTTLExhausted = "ttl_exhausted"
	TaskFailed       = "failed"
)

// TTLState is a pass's TTL: Allocated by TTL(profile), Used and Remaining
// as the engine reports them (Used, when absent, is Allocated − Remaining,
// at least 0), Exhausted when Remaining is 0 or the status says so.
type TTLState struct {
	Allocated int  `json:"allocated"`
	Used      int  `json:"used"`
	Remaining int  `json:"remaining"`
	Exhausted bool `json:"exhausted"`
}

// ProfileChange is a TaskProfile update at a pass boundary (phase D).
// Justified: the previous pass failed convergence and reported validation
// issues, the design's condition for an update.
type ProfileChange struct {
	Pass      int                `json:"pass"`
	From      events.TaskProfile `json:"from"`
	To        events.TaskProfile `json:"to"`
	Justified bool               `json:"justified"`
}

// Pass is one pass of the execution history.
type Pass struct {
	PassNumber        int                       `json:"pass_number"`
	EventID           string                    `json:"event_id"`
	Time              string                    `json:"time"`
	SessionID         string                    `json:"session_id,omitempty"`
	Phase             string                    `json:"phase"`
	Status            string                    `json:"status"`
	Profile           events.TaskProfile        `json:"profile"`
	ProfileSource     string                    `json:"profile_source"`
	ProfileChange     *ProfileChange            `json:"profile_change,omitempty"`
	TTL               TTLState                  `json:"ttl"`
	PlanGenerated     bool                      `json:"plan_generated"` // the pass carried a plan snapshot
	RefinementActions []events.RefinementAction `json:"refinement_actions,omitempty"`
	Plan              Plan                      `json:"plan"` // after the refinement actions
	StepsExecuted     []events.ExecutedStep     `json:"steps_executed,omitempty"`
	Verdict           Verdict                   `json:"convergence"`
	ValidationIssues  []events.ValidationIssue  `json:"validation_issues,omitempty"`
	Output            string                    `json:"output,omitempty"`
	Error             string                    `json:"error,omitempty"`
	// MissingBefore lists the pass numbers between the previous recorded
	// pass and this one that the log does not hold (or that were
	// rejected): accepted and flagged, at most MaxPassGap of them.
	MissingBefore []int `json:"missing_before,omitempty"`
}

// MaxPassGap is the most pass numbers one pass may skip (its
// MissingBefore); a pass skipping more is rejected. The multi-pass design
// runs a handful of passes per task (its TTL counts steps within a pass,
// 6 at the default profile), so 100 missing passes is already a lost
// stretch of log, not an engine's numbering; without a bound one event
// (pass_number 100,000,000) made a list of that many numbers, and the
// service ran out of memory applying it, again at every restart.
const MaxPassGap = 100

// Task is a reasoning task's current state.
type Task struct {
	ID             string             `json:"id"`
	Scope          string             `json:"scope"`
	Task           string             `json:"task,omitempty"`
	Passes         int                `json:"passes"` // the last pass number
	Recorded       int                `json:"passes_recorded"`
	Status         string             `json:"status"`
	Converged      bool               `json:"converged"`
	ConvergedPass  int                `json:"converged_pass,omitempty"` // first pass that converged
	Profile        events.TaskProfile `json:"profile"`
	ProfileChanges int                `json:"profile_changes"`
	Refinements    int                `json:"refinement_actions"`
	Plan           Plan               `json:"plan"`
	Output         string             `json:"output,omitempty"`
	LastVerdict    Verdict            `json:"last_convergence"`
	StartedAt      string             `json:"started_at"`
	UpdatedAt      string             `json:"updated_at"`
}

// Processor is the passes processor.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicReasoning} }

// StatePerKey implements processors.KeyedState: every row is one reasoning
// task's (its record key).
func (Processor) StatePerKey() bool { return true }

func taskKey(key string) string        { return "t/" + key }
func passKey(key string, n int) string { return "p/" + key + "\x00" + projections.SeqKey(n) }
func passPrefix(key string) string     { return "p/" + key + "\x00" }

var idIndexKey = projections.IDIndexKey

// Apply implements processors.Processor.
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.ReasoningPassCompleted {
		return &RejectError{Pointer: "/type", Reason: fmt.Sprintf("the passes processor reads %s only, not %s", events.ReasoningPassCompleted, env.Type)}
	}
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	scope, id, _ := events.SplitEntityKey(key)
	var d events.ReasoningPassData
	if err := env.Decode(&d); err != nil {
		return &RejectError{Pointer: "/data", Reason: err.Error()}
	}
	var t Task
	ok, err := tx.GetJSON(taskKey(key), &t)
	if err != nil {
		return err
	}
	var prev *Pass
	if !ok {
		t = Task{ID: id, Scope: scope, Status: TaskOpen, StartedAt: env.TimeUTC()}
		if err := tx.Set(idIndexKey(id, scope), nil); err != nil {
			return err
		}
	} else {
		var pp Pass
		if _, err := tx.GetJSON(passKey(key, t.Passes), &pp); err != nil {
			return err
		}
		prev = &pp
	}
	if d.PassNumber == t.Passes {
		return &RejectError{Pointer: "/data/pass_number", Reason: fmt.Sprintf("pass %d of task %q is already recorded (the last pass is %d)", d.PassNumber, id, t.Passes)}
	}
	if d.PassNumber < t.Passes {
		// not necessarily recorded: a pass skipped over (missing_before of
		// a later one) cannot be added afterwards either
		return &RejectError{Pointer: "/data/pass_number", Reason: fmt.Sprintf("pass %d of task %q is not above the last recorded pass %d: passes are recorded in increasing order", d.PassNumber, id, t.Passes)}
	}
	if gap := d.PassNumber - t.Passes - 1; gap > MaxPassGap {
		return &RejectError{Pointer: "/data/pass_number", Reason: fmt.Sprintf("pass %d of task %q would leave %d passes missing after pass %d: at most %d may be missing (MaxPassGap)", d.PassNumber, id, gap, t.Passes, MaxPassGap)}
	}
	p := Pass{PassNumber: d.PassNumber, EventID: env.ID, Time: env.TimeUTC(), SessionID: d.SessionID, Phase: d.Phase, Status: d.Status,
		RefinementActions: d.RefinementActions, StepsExecuted: d.StepsExecuted, ValidationIssues: d.ValidationIssues, Output: d.Output, Error: d.Error}
	for n := t.Passes + 1; n < d.PassNumber; n++ {
		p.MissingBefore = append(p.MissingBefore, n)
	}
	if p.Status == "" {
		p.Status = events.PassCompleted
	}

	// phase A: the TaskProfile (given, else the previous pass's, else the
	// design's default) and its TTL
	switch {
	case d.Profile != nil:
		p.Profile, p.ProfileSource = *d.Profile, d.ProfileSource
		if p.ProfileSource == "" {
			p.ProfileSource = "inferred"
		}
	case prev != nil:
		p.Profile, p.ProfileSource = prev.Profile, prev.ProfileSource
	default:
		p.Profile, p.ProfileSource = events.DefaultTaskProfile(), "default"
	}
	if prev != nil && p.Profile != prev.Profile {
		p.ProfileChange = &ProfileChange{Pass: p.PassNumber, From: prev.Profile, To: p.Profile,
			Justified: !prev.Verdict.Converged && len(prev.ValidationIssues) > 0}
		t.ProfileChanges++
	}
	p.TTL = TTLState{Allocated: TTL(p.Profile), Remaining: d.TTLRemaining}
	if d.TTLUsed != nil {
		p.TTL.Used = *d.TTLUsed
	} else {
		p.TTL.Used = max(0, p.TTL.Allocated-d.TTLRemaining)
	}
	p.TTL.Exhausted = d.TTLRemaining == 0 || d.Status == events.PassTTLExhausted

	// phase B: the plan (this pass's snapshot, else the previous plan)
	// refined by the pass's actions
	plan := t.Plan
	if d.Plan != nil {
		p.PlanGenerated = true
		if plan, err = FromSnapshot(d.Plan); err != nil {
			return err
		}
	}
	if plan, err = Refine(plan, d.RefinementActions); err != nil {
		return err
	}
	p.Plan = plan

	// phase C: convergence by the thresholds
	p.Verdict = Judge(d.Convergence, p.Status, p.TTL.Exhausted, d.ValidationIssues)

	t.Passes = p.PassNumber
	t.Recorded++
	if d.Task != "" {
		t.Task = d.Task
	}
	t.Profile, t.Plan, t.LastVerdict, t.UpdatedAt = p.Profile, p.Plan, p.Verdict, env.TimeUTC()
	t.Refinements += len(d.RefinementActions)
	if d.Output != "" {
		t.Output = d.Output
	}
	t.Converged = p.Verdict.Converged
	if t.Converged && t.ConvergedPass == 0 {
		t.ConvergedPass = p.PassNumber
	}
	switch {
	case p.Verdict.Converged:
		t.Status = TaskConverged
	case p.Status == events.PassError:
		t.Status = TaskFailed
	case p.TTL.Exhausted:
		t.Status = TaskTTLExhausted
	default:
		t.Status = TaskOpen
	}
	if err := tx.SetJSON(passKey(key, p.PassNumber), p); err != nil {
		return err
	}
	return tx.SetJSON(taskKey(key), t)
}
