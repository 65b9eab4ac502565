package events

import "encoding/json"

// Payload types, one per event type; JSON field names are those of the
// schemas in schemas/ (which come from the design documents).

// Check is a success criterion's machine check. Kind selects the fields:
//   - tool_call {name, arguments}: a successful call of tool name whose
//     arguments contain arguments (subset match: objects by key, arrays
//     element-wise with equal length, numbers by value);
//   - output_contains {text}: text appears in the output or in an assistant
//     message (case-insensitive, thousands separators ignored);
//   - json_schema {schema}: the output parses as JSON valid against schema;
//   - regex {pattern}: the output matches the RE2 pattern;
//   - judge {rubric}: an LLM judge fills the rubric checklist (unevaluated
//     until a judge is configured);
//   - no_other_calls {tools, allowed}: every successful call of one of tools
//     matches an entry of allowed (no unrequested side effects); a missing
//     allowed means no call of those tools is allowed.
type Check struct {
	Kind      string          `json:"kind"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Text      string          `json:"text,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Pattern   string          `json:"pattern,omitempty"`
	Rubric    []string        `json:"rubric,omitempty"`
	Tools     []string        `json:"tools,omitempty"`
	Allowed   []Call          `json:"allowed,omitempty"`
}

// Check kinds.
const (
	CheckToolCall       = "tool_call"
	CheckOutputContains = "output_contains"
	CheckJSONSchema     = "json_schema"
	CheckRegex          = "regex"
	CheckJudge          = "judge"
	CheckNoOtherCalls   = "no_other_calls"
)

// Call is a tool name with (a subset of) its arguments.
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Criterion is one success criterion of a session (PAIR design). Weight
// is relative (≥ 0); a weight of 0 makes the criterion informative only.
type Criterion struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Weight      float64 `json:"weight"`
	Check       Check   `json:"check"`
}

// Assignment is an agent's role in a session.
type Assignment struct {
	AgentID string `json:"agent_id"`
	Role    string `json:"role"`
}

// SessionStartedData is the data of coordination.session.started.v1.
type SessionStartedData struct {
	OriginalTask    string       `json:"original_task"`
	SuccessCriteria []Criterion  `json:"success_criteria"`
	Assignments     []Assignment `json:"assignments,omitempty"`
	Iteration       int          `json:"iteration,omitempty"`
	ParentSession   string       `json:"parent_session,omitempty"`
}

// MinuteData is the data of coordination.minute.recorded.v1.
type MinuteData struct {
	EventType  string          `json:"event_type"`
	Actor      string          `json:"actor"`
	Data       json.RawMessage `json:"data"`
	MemoryNote string          `json:"memory_note,omitempty"`
}

// SessionCompletedData is the data of coordination.session.completed.v1.
// Reward is the producer's own verdict in [0, 1]; evaluators never see it.
type SessionCompletedData struct {
	Output    string            `json:"output"`
	Decisions []json.RawMessage `json:"decisions,omitempty"`
	Outcome   string            `json:"outcome"`
	Reward    *float64          `json:"reward,omitempty"`
}

// Session outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeUnknown = "unknown"
)

// TaskCompletedData is the data of workflow.task.completed.v1.
type TaskCompletedData struct {
	WorkflowID string          `json:"workflow_id"`
	Layer      int             `json:"layer"`
	TaskID     string          `json:"task_id"`
	ToolID     string          `json:"tool_id"`
	Inputs     json.RawMessage `json:"inputs,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Success    bool            `json:"success"`
	DurationMS float64         `json:"duration_ms,omitempty"`
}

// ReducerAppliedData is the data of workflow.reducer.applied.v1.
type ReducerAppliedData struct {
	WorkflowID string          `json:"workflow_id"`
	Layer      int             `json:"layer"`
	Channel    string          `json:"channel"`
	Update     json.RawMessage `json:"update"`
}

// MemoryRecordedData is the data of memory.recorded.v1 (ReasoningBank).
type MemoryRecordedData struct {
	MemoryID      string   `json:"memory_id"`
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	Content       string   `json:"content"`
	Outcome       string   `json:"outcome"`
	Tags          []string `json:"tags,omitempty"`
	Source        string   `json:"source"`
	SourceSession string   `json:"source_session,omitempty"`
}

// MemoryFeedbackData is the data of memory.feedback.v1 (ReasoningBank).
type MemoryFeedbackData struct {
	MemoryID string `json:"memory_id"`
	Signal   string `json:"signal"`
	Positive bool   `json:"positive"`
	Comment  string `json:"comment,omitempty"`
	// Source is who gave the signal (optional): "token:<name>" for the
	// HTTP API and MCP over HTTP, "mcp:<client>" for MCP over stdio,
	// "session:<id>" for a task_completion signal of a session. Two
	// signals of one source never make consensus (processors/memories).
	Source string `json:"source,omitempty"`
}

// CriterionResult is one criterion's outcome in an evaluation. Score is
// 0..100 and present only when Evaluated.
type CriterionResult struct {
	ID          string   `json:"id"`
	Description string   `json:"description,omitempty"`
	Kind        string   `json:"kind"`
	Weight      float64  `json:"weight"`
	Evaluated   bool     `json:"evaluated"`
	Score       *float64 `json:"score,omitempty"`
	Detail      string   `json:"detail,omitempty"`
}

// Gap is a criterion scored below 100 (PAIR FLUX design): severity low
// (score ≥ 90), medium (≥ 75), high (≥ 50) or critical;
// ImpactOnCriteria = 100 − score; ImprovementPriority =
// max(1, floor((100 − score)/10)).
type Gap struct {
	CriterionID         string  `json:"criterion_id"`
	Description         string  `json:"description,omitempty"`
	Score               float64 `json:"score"`
	Severity            string  `json:"severity"`
	ImpactOnCriteria    float64 `json:"impact_on_criteria"`
	ImprovementPriority int     `json:"improvement_priority"`
	Detail              string  `json:"detail,omitempty"`
}

// EvaluationData is the data of evaluation.completed.v1. Composite is the
// weighted mean (0..100) of the evaluated criteria; Recommendation is
// meets_criteria (≥ 95), needs_improvement (≥ 75), significant_gaps (≥ 25)
// or total_failure (PAIR FLUX design).
type EvaluationData struct {
	SessionID      string            `json:"session_id"`
	Criteria       []CriterionResult `json:"criteria"`
	Composite      float64           `json:"composite"`
	Gaps           []Gap             `json:"gaps"`
	Recommendation string            `json:"recommendation"`
	Unevaluated    []string          `json:"unevaluated,omitempty"`
	// Revision is 0 for the evaluation at completion and grows by one each
	// time a judge answer re-scores the session.
	Revision int `json:"revision,omitempty"`
}

// Recommendations of an evaluation.
const (
	MeetsCriteria    = "meets_criteria"
	NeedsImprovement = "needs_improvement"
	SignificantGaps  = "significant_gaps"
	TotalFailure     = "total_failure"
	// NotEvaluated: none of the weighted criteria (of any criterion, when
	// none has a weight) could be scored — judge criteria without an LLM,
	// broken checks — so the composite says nothing about the session
	// (processors/flux, issue 11).
	NotEvaluated = "not_evaluated"
)
