package events

// Payload types of the reasoning family (reasoning.pass.completed.v1),
// from the adaptive multi-pass reasoning design: each pass runs phases
// A (TaskProfile and TTL) → B (plan, validate, refine) → C (execute,
// validate, assess convergence) → D (update the TaskProfile).

import "math"

// TaskProfile is phase A's inference about a task. Default on inference
// failure (DefaultTaskProfile): depth 3, sufficiency 0.5, tool usage
// moderate, breadth moderate, confidence medium.
type TaskProfile struct {
	ReasoningDepth         int     `json:"reasoning_depth"`         // 1..10
	InformationSufficiency float64 `json:"information_sufficiency"` // 0..1
	ExpectedToolUsage      string  `json:"expected_tool_usage"`     // none | light | moderate | heavy
	OutputBreadth          string  `json:"output_breadth"`          // narrow | moderate | broad
	ConfidenceRequirement  string  `json:"confidence_requirement"`  // low | medium | high
}

// TTL is phase A's allocation for a pass with this profile, in executed
// steps: a pure, deterministic function of the profile (same profile →
// same TTL), as the multi-pass reasoning design asks. Chronicle's mapping:
//
//	TTL = max(1, ceil(2 · reasoning_depth · tools · breadth · confidence · sufficiency))
//
// with tools none 0.5, light 0.75, moderate 1, heavy 1.5; breadth narrow
// 0.75, moderate 1, broad 1.5; confidence low 0.75, medium 1, high 1.25;
// sufficiency = 1.5 − information_sufficiency (scarce information → more
// steps). Every factor is 1 at the design's default profile, which gets
// 2 · 3 = 6 steps. Unknown enum values count as the default's.
func (p TaskProfile) TTL() int {
	f := 2 * float64(max(p.ReasoningDepth, 1))
	f *= ttlFactor(p.ExpectedToolUsage, map[string]float64{"none": 0.5, "light": 0.75, "moderate": 1, "heavy": 1.5})
	f *= ttlFactor(p.OutputBreadth, map[string]float64{"narrow": 0.75, "moderate": 1, "broad": 1.5})
	f *= ttlFactor(p.ConfidenceRequirement, map[string]float64{"low": 0.75, "medium": 1, "high": 1.25})
	s := min(max(p.InformationSufficiency, 0), 1)
	f *= 1.5 - s
	// round away float noise before ceil (0.75·2·… can land at n+1e-15)
	return max(1, int(math.Ceil(math.Round(f*1e9)/1e9)))
}

func ttlFactor(v string, m map[string]float64) float64 {
	if f, ok := m[v]; ok {
		return f
	}
	return 1
}

// DefaultTaskProfile is the design's profile when inference fails.
func DefaultTaskProfile() TaskProfile {
	return TaskProfile{ReasoningDepth: 3, InformationSufficiency: 0.5, ExpectedToolUsage: "moderate", OutputBreadth: "moderate", ConfidenceRequirement: "medium"}
}

// PlanStep is one step of a plan. StepID is stable across refinements;
// ParentID nests it in a sub-plan (empty: top level). StepIndex (1-based)
// and TotalSteps are positions in the plan as it stands.
type PlanStep struct {
	StepID          string   `json:"step_id,omitempty"`
	ParentID        string   `json:"parent_id,omitempty"`
	StepIndex       int      `json:"step_index,omitempty"`
	TotalSteps      int      `json:"total_steps,omitempty"`
	Description     string   `json:"description"`
	IncomingContext string   `json:"incoming_context,omitempty"`
	HandoffToNext   string   `json:"handoff_to_next,omitempty"`
	DependsOn       []string `json:"depends_on,omitempty"`
}

// Plan is a pass's plan.
type Plan struct {
	Steps []PlanStep `json:"steps"`
}

// Refinement action types (delta operations that keep step ids).
const (
	RefineAdd    = "ADD"
	RefineModify = "MODIFY"
	RefineRemove = "REMOVE"
)

// StepChanges are the fields an ADD sets or a MODIFY changes (a MODIFY
// leaves absent fields as they are).
type StepChanges struct {
	ParentID        *string  `json:"parent_id,omitempty"`
	Description     *string  `json:"description,omitempty"`
	IncomingContext *string  `json:"incoming_context,omitempty"`
	HandoffToNext   *string  `json:"handoff_to_next,omitempty"`
	DependsOn       []string `json:"depends_on,omitempty"`
}

// RefinementAction is one delta operation on the plan. Attempt groups
// actions into phase B's refinement attempts (0: the action is its own
// attempt).
type RefinementAction struct {
	Type    string       `json:"type"`
	Target  string       `json:"target"`
	Attempt int          `json:"attempt,omitempty"`
	Changes *StepChanges `json:"changes,omitempty"`
}

// ExecutedStep is one step phase C executed: a thought, a tool call with
// its input, and what it observed.
type ExecutedStep struct {
	StepID          string `json:"step_id,omitempty"`
	StepIndex       int    `json:"step_index"`
	TotalSteps      int    `json:"total_steps"`
	Thought         string `json:"thought,omitempty"`
	Tool            string `json:"tool,omitempty"`
	Input           string `json:"input,omitempty"`
	Observation     string `json:"observation,omitempty"`
	IncomingContext string `json:"incoming_context,omitempty"`
	HandoffToNext   string `json:"handoff_to_next,omitempty"`
	Success         *bool  `json:"success,omitempty"`
}

// ConvergenceScores is phase C's convergence assessment as the engine
// reports it (scores 0..1).
type ConvergenceScores struct {
	Converged    bool     `json:"converged"`
	Completeness float64  `json:"completeness"`
	Coherence    float64  `json:"coherence"`
	Consistency  float64  `json:"consistency"`
	ReasonCodes  []string `json:"reason_codes,omitempty"`
}

// ValidationIssue is one finding of a validation report.
type ValidationIssue struct {
	Code     string `json:"code"`
	Severity string `json:"severity"` // info | warning | error
	StepID   string `json:"step_id,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Pass statuses.
const (
	PassCompleted    = "completed"
	PassHalted       = "halted"
	PassTTLExhausted = "ttl_exhausted"
	PassError        = "error"
)

// ReasoningPassData is the data of reasoning.pass.completed.v1. TaskID
// is the record key (absent: the envelope's sessionid). Plan is the plan
// phase B generated in this pass before refinement (nil: the plan as the
// previous pass left it); RefinementActions apply on top of it.
type ReasoningPassData struct {
	TaskID            string             `json:"task_id,omitempty"`
	Task              string             `json:"task,omitempty"`
	SessionID         string             `json:"session_id,omitempty"`
	PassNumber        int                `json:"pass_number"`
	Phase             string             `json:"phase"`
	Status            string             `json:"status,omitempty"`
	Profile           *TaskProfile       `json:"profile,omitempty"`
	ProfileSource     string             `json:"profile_source,omitempty"`
	TTLUsed           *int               `json:"ttl_used,omitempty"`
	TTLRemaining      int                `json:"ttl_remaining"`
	Plan              *Plan              `json:"plan,omitempty"`
	RefinementActions []RefinementAction `json:"refinement_actions,omitempty"`
	StepsExecuted     []ExecutedStep     `json:"steps_executed,omitempty"`
	Convergence       ConvergenceScores  `json:"convergence"`
	ValidationIssues  []ValidationIssue  `json:"validation_issues,omitempty"`
	Output            string             `json:"output,omitempty"`
	Error             string             `json:"error,omitempty"`
}
