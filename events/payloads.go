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
//   - exact_match {text}: the output equals text under HotPotQA's answer
//     normalisation (package events/answer: lower case, no punctuation, no
//     articles a/an/the, whitespace collapsed);
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
	CheckExactMatch     = "exact_match"
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
	// RecordedBy is who started the session ("token:<name>": the HTTP API
	// of a service with tokens sets it from the caller and refuses another
	// value; a service without tokens leaves it as sent, and a producer
	// writing to Kafka names whom it likes). The memories distilled from the session
	// carry it (MemoryRecordedData.RecordedBy), so the sessions of one
	// caller are one author of usages (issue 11 item 4).
	RecordedBy string `json:"recorded_by,omitempty"`
}

// MinuteData is the data of coordination.minute.recorded.v1.
type MinuteData struct {
	EventType  string          `json:"event_type"`
	Actor      string          `json:"actor"`
	Data       json.RawMessage `json:"data"`
	MemoryNote string          `json:"memory_note,omitempty"`
}

// SessionCompletedData is the data of coordination.session.completed.v1.
// Output is the session's final answer (the output_contains, json_schema,
// regex and exact_match checks read it); Outcome is the producer's
// OutcomeSuccess, OutcomeFailure or OutcomeUnknown (the schema refuses
// others); Reward is the producer's own verdict in [0, 1]; evaluators
// never see it. Like every coordination.session.* event it belongs to the
// session of its envelope's SessionID, which it requires.
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

// TaskCompletedData is the data of workflow.task.completed.v1: one tool
// call. With the envelope's SessionID set it is a call of that session (in
// its trace, and what its tool_call and no_other_calls criteria check),
// else of workflow WorkflowID. Required: WorkflowID, TaskID and ToolID
// (not empty), Layer (≥ 0) and Success; Inputs and Result are any JSON
// (a tool_call criterion matches its arguments against Inputs);
// DurationMS is the call's duration in milliseconds (≥ 0).
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

// Workflow-state channels of workflow.reducer.applied.v1 (PML design:
// WorkflowState). Messages, tasks and decisions append; context merges.
const (
	ChannelMessages  = "messages"
	ChannelTasks     = "tasks"
	ChannelDecisions = "decisions"
	ChannelContext   = "context"
)

// CheckpointSavedData is the data of workflow.checkpoint.saved.v1: layer
// is the DAG layer just finished; processed_commands are the queued
// commands the executor handled before it (removed from the queue).
type CheckpointSavedData struct {
	WorkflowID        string   `json:"workflow_id"`
	Layer             int      `json:"layer"`
	ProcessedCommands []string `json:"processed_commands,omitempty"`
}

// Workflow commands (PML design: command queue).
const (
	CommandInjectTasks = "inject_tasks"
	CommandReplanDAG   = "replan_dag"
	CommandApprove     = "approve"
	CommandReject      = "reject"
	CommandAbort       = "abort"
)

// CommandEnqueuedData is the data of workflow.command.enqueued.v1.
type CommandEnqueuedData struct {
	WorkflowID string          `json:"workflow_id"`
	CommandID  string          `json:"command_id"`
	Command    string          `json:"command"`
	Args       json.RawMessage `json:"args,omitempty"`
	By         string          `json:"by,omitempty"`
}

// Decision kinds: agent-in-the-loop and human-in-the-loop.
const (
	DecisionAgent = "agent"
	DecisionHuman = "human"
)

// DecisionRequestedData is the data of workflow.decision.requested.v1.
type DecisionRequestedData struct {
	WorkflowID string   `json:"workflow_id"`
	DecisionID string   `json:"decision_id"`
	Kind       string   `json:"kind"`
	Layer      int      `json:"layer,omitempty"`
	Question   string   `json:"question"`
	Options    []string `json:"options,omitempty"`
}

// DecisionAnsweredData is the data of workflow.decision.answered.v1.
type DecisionAnsweredData struct {
	WorkflowID string `json:"workflow_id"`
	DecisionID string `json:"decision_id"`
	Answer     string `json:"answer"`
	By         string `json:"by,omitempty"`
	Comment    string `json:"comment,omitempty"`
}

// ForkedData is the data of workflow.forked.v1: the parent's state as of
// its checkpoint (topic:partition:offset) travels in the event, so the
// new workflow's processor reads only its own rows; update holds one
// reducer update per channel, applied after the copy.
type ForkedData struct {
	WorkflowID         string                     `json:"workflow_id"`
	ParentWorkflowID   string                     `json:"parent_workflow_id"`
	ParentCheckpointID string                     `json:"parent_checkpoint_id"`
	State              json.RawMessage            `json:"state"`
	Update             map[string]json.RawMessage `json:"update,omitempty"`
}

// ResumedData is the data of workflow.resumed.v1: the checkpoint by its
// log position and by the id of its workflow.checkpoint.saved.v1 event.
type ResumedData struct {
	WorkflowID        string `json:"workflow_id"`
	CheckpointID      string `json:"checkpoint_id"`
	CheckpointEventID string `json:"checkpoint_event_id"`
}

// SuggestionFeedbackData is the data of workflow.suggestion.feedback.v1:
// the record key is the policy (events.EntityKey(scope, policy)).
type SuggestionFeedbackData struct {
	Policy       string  `json:"policy"`
	SuggestionID string  `json:"suggestion_id,omitempty"`
	Accepted     bool    `json:"accepted"`
	Mode         string  `json:"mode"`
	Confidence   float64 `json:"confidence"`
}

// WorkflowCompletedData is the data of workflow.completed.v1.
type WorkflowCompletedData struct {
	WorkflowID string          `json:"workflow_id"`
	Outcome    string          `json:"outcome"`
	Output     json.RawMessage `json:"output,omitempty"`
}

// MemoryRecordedData is the data of memory.recorded.v1 (ReasoningBank).
// A producer's recording needs MemoryID, Title (1–50 characters),
// Description (1–200), Content (not empty), Outcome (OutcomeSuccess or
// OutcomeFailure) and Source "explicit" ("distilled" is Chronicle's own
// distillers'; Publish refuses it from a producer).
type MemoryRecordedData struct {
	// MemoryID is the id of the memory the recording creates (the id
	// feedback names), and its record key. A recording whose normalised
	// title and content equal a memory's of its scope is merged into that
	// memory instead, whatever its MemoryID; a MemoryID that already holds
	// other content is refused by the memory bank (dead-lettered).
	// POST /v1/memories uses the content address (processors/distill
	// MemoryID: "mem-" and a hash of scope, title and content), which
	// never collides so.
	MemoryID    string   `json:"memory_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Outcome     string   `json:"outcome"`
	Tags        []string `json:"tags,omitempty"`
	// Source is "explicit" (a recording) or "distilled" (Chronicle's
	// distillers); it sets the new memory's initial confidence.
	Source string `json:"source"`
	// SourceSession is the session the memory was learned from
	// (optional): searches can leave its memories out
	// (search.Query.ExcludeSourceSession).
	SourceSession string `json:"source_session,omitempty"`
	// RecordedBy is who recorded the memory (optional): "token:<name>"
	// for the HTTP API and MCP over HTTP, "mcp:<client>" for MCP over
	// stdio; the author of the memory's history entry.
	RecordedBy string `json:"recorded_by,omitempty"`
	// InitialConfidence, when set (in [0, 1]), is the memory's confidence
	// when this event creates it, instead of the memory bank's default by
	// source and outcome (processors/memories InitialConfidence); it is
	// ignored when the event merges into an existing memory. Only
	// Chronicle's own writers set it — the pair worker's
	// pair_improvement_completed memory, at final_score / 100 (PAIR
	// design) —; ParseProducerEvent rejects a producer's event carrying it.
	InitialConfidence *float64 `json:"initial_confidence,omitempty"`
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

// MemoryRetrievedData is the data of memory.retrieved.v1: a memory a
// search returned (a usage). Rank is the hit's 1-based place in the
// answer; Relevance, when set, its score; ReaderScopes the scopes the
// searcher could read (schemas/memory.retrieved.v1.json says how each is
// shown).
type MemoryRetrievedData struct {
	MemoryID     string   `json:"memory_id"`
	SessionID    string   `json:"session_id,omitempty"`
	Source       string   `json:"source,omitempty"`
	Query        string   `json:"query,omitempty"`
	Rank         int      `json:"rank,omitempty"`
	Relevance    *float64 `json:"relevance,omitempty"`
	ReaderScopes []string `json:"reader_scopes,omitempty"`
}

// CriterionResult is one criterion's outcome in an evaluation. Score is
// 0..100 and present only when Evaluated.
type CriterionResult struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Kind        string `json:"kind"`
	// Name is the check's name (Check.Name: the tool of a tool_call
	// check), when it has one.
	Name      string   `json:"name,omitempty"`
	Weight    float64  `json:"weight"`
	Evaluated bool     `json:"evaluated"`
	Score     *float64 `json:"score,omitempty"`
	Detail    string   `json:"detail,omitempty"`
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
	// FirstScored is true on the judge revision that scores a session
	// for the first time: every evaluation before it was not_evaluated
	// (all its weighted criteria were judge criteria without an answer),
	// and this one is not. PAIR and the distillers, which skip judge
	// revisions (the session was handled at revision 0) and not_evaluated
	// evaluations (nothing to tell success from failure), act on it as on
	// the evaluation at completion; before, such a session never got a
	// context, a revision or a memory.
	FirstScored bool `json:"first_scored,omitempty"`
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

// MemoryCreatedData is the data of memory.created.v1: how one recording
// (memory.recorded.v1, or a memory of a distillation.completed.v1)
// entered the memory bank. MemoryID is the id the recording carried (the
// record key). MergedInto is empty for a new memory; otherwise it is the
// id of the memory of the same scope with the same normalised title and
// content, which the recording added evidence to (it may equal MemoryID:
// a distilled memory's id is its content address). Title, Description,
// Outcome, Tags, Confidence and Evidence are the bank memory's after the
// recording (for a merge, not the recording's own text, which its
// memory.recorded.v1, RecordedEventID, holds); Source and SourceSession
// are the recording's. Pruned is true when the memory merged into was
// pruned before (memory.pruned.v1): pruning is final, so the memory stays
// out of searches and a subscriber keeps it out of its set; it is left out
// (false) otherwise.
type MemoryCreatedData struct {
	MemoryID      string   `json:"memory_id"`
	MergedInto    string   `json:"merged_into,omitempty"`
	Title         string   `json:"title"`
	Description   string   `json:"description,omitempty"`
	Outcome       string   `json:"outcome"`
	Tags          []string `json:"tags,omitempty"`
	Source        string   `json:"source"`
	SourceSession string   `json:"source_session,omitempty"`
	Confidence    float64  `json:"confidence"`
	Evidence      int      `json:"evidence"`
	// RecordedEventID is the id of the memory.recorded.v1 (or
	// distillation.completed.v1) the memory came from: the causationid.
	RecordedEventID string `json:"recorded_event_id"`
	Pruned          bool   `json:"pruned,omitempty"`
}

// PatternChangedData is the data of coordination.pattern.changed.v1: a
// coordination pattern after one coordination.pattern.counted.v1.
// Change is "created" for a pattern's first session, "removed" when its
// last session left it (its tool sequence changed after a call that came
// after its completion: the pattern is gone, counts 0), else "updated";
// SessionID is the session whose count changed it. Confidence is
// (succeeded_count + 1) / (session_count + 2) (processors/sessions
// Pattern.Confidence).
type PatternChangedData struct {
	PatternID      string   `json:"pattern_id"`
	Change         string   `json:"change"`
	SessionID      string   `json:"session_id"`
	Steps          []string `json:"steps"`
	Category       string   `json:"category"`
	Tools          []string `json:"tools,omitempty"`
	Task           string   `json:"task"`
	SessionCount   int      `json:"session_count"`
	SucceededCount int      `json:"succeeded_count"`
	Confidence     float64  `json:"confidence"`
	Outcome        string   `json:"outcome"`
}
