package events

import (
	"fmt"
	"sort"
	"strings"
)

// Type is a CloudEvents type attribute; the version is part of the name
// (".v1"), so an incompatible change is a new type and an upcaster.
type Type string

// Producer event types. Field names come from the design documents.
const (
	// SessionStarted: {original_task, success_criteria[], assignments[]} (PAIR).
	SessionStarted Type = "coordination.session.started.v1"
	// MinuteRecorded: {event_type, actor, data, memory_note} (PAIR).
	MinuteRecorded Type = "coordination.minute.recorded.v1"
	// SessionCompleted: {output, decisions[], outcome, reward} (PAIR).
	SessionCompleted Type = "coordination.session.completed.v1"
	// ReasoningPassCompleted: one pass (phases A–D) of the adaptive
	// multi-pass reasoning engine (ReasoningPassData), on TopicReasoning
	// keyed by its reasoning task.
	ReasoningPassCompleted Type = "reasoning.pass.completed.v1"
	// SearchNodeExpanded: one candidate node produced by a Beam-A* node
	// expansion, after dedup, pre-filter and evaluation (SearchNodeData).
	SearchNodeExpanded Type = "search.node.expanded.v1"
	// SearchStarted: a tree search begins (SearchStartedData).
	SearchStarted Type = "search.started.v1"
	// SearchQuotaReserved: tokens reserved before one node expansion
	// (SearchQuotaReservedData).
	SearchQuotaReserved Type = "search.quota.reserved.v1"
	// SearchFrontierDecided: the end of one expansion: reconcile (refund)
	// and the beam kept (SearchFrontierDecidedData).
	SearchFrontierDecided Type = "search.frontier.decided.v1"
	// SearchPaused: a node needs a human; the frontier is saved
	// (SearchPausedData).
	SearchPaused Type = "search.paused.v1"
	// SearchResumed: the human's decision on a paused search
	// (SearchResumedData).
	SearchResumed Type = "search.resumed.v1"
	// SearchCompleted: the search ended, with its winning path
	// (SearchCompletedData).
	SearchCompleted Type = "search.completed.v1"
	// SearchBranchCompleted: one branch of a panel (parallel branches of
	// one task) finished with its output (SearchBranchData).
	SearchBranchCompleted Type = "search.branch.completed.v1"
	// SearchConsensusReduced: a reducer chose among a panel's branches
	// (SearchConsensusData).
	SearchConsensusReduced Type = "search.consensus.reduced.v1"
	// SearchCandidateCorrected: the DiffProcessor's RFC 6902 JSON Patch
	// correcting a branch's schema-invalid output (SearchCorrectionData).
	SearchCandidateCorrected Type = "search.candidate.corrected.v1"
	// SolverLocked: the hashes of everything a successful search used —
	// prompts, config, model, proposer and evaluator versions — were frozen
	// into a lock file (SolverLockedData).
	SolverLocked Type = "solver.locked.v1"
	// MemoryRecorded: a ReasoningBank memory.
	MemoryRecorded Type = "memory.recorded.v1"
	// MemoryFeedback: a confidence signal on a memory.
	MemoryFeedback Type = "memory.feedback.v1"
	// WorkflowTaskCompleted: one tool call of a workflow layer.
	WorkflowTaskCompleted Type = "workflow.task.completed.v1"
	// WorkflowReducerApplied: a workflow-state reducer update on one
	// channel (messages, tasks, decisions append; context merges).
	WorkflowReducerApplied Type = "workflow.reducer.applied.v1"
	// WorkflowCheckpointSaved: a DAG layer finished; the workflows
	// processor saves the complete state as of this event.
	WorkflowCheckpointSaved Type = "workflow.checkpoint.saved.v1"
	// WorkflowCommandEnqueued: a command (inject_tasks, replan_dag, approve,
	// reject, abort) for the executor, processed between layers.
	WorkflowCommandEnqueued Type = "workflow.command.enqueued.v1"
	// WorkflowDecisionRequested: an agent (AIL) or human (HIL) decision
	// point; a human one pauses the workflow until answered.
	WorkflowDecisionRequested Type = "workflow.decision.requested.v1"
	// WorkflowDecisionAnswered: the answer to a decision point.
	WorkflowDecisionAnswered Type = "workflow.decision.answered.v1"
	// WorkflowForked: a new workflow from another's checkpoint (the state
	// travels in the event) with a state update.
	WorkflowForked Type = "workflow.forked.v1"
	// WorkflowResumed: the workflow restarts from one of its checkpoints.
	WorkflowResumed Type = "workflow.resumed.v1"
	// WorkflowCompleted: the workflow ended.
	WorkflowCompleted Type = "workflow.completed.v1"
	// WorkflowSuggestionFeedback: a suggested DAG was accepted or
	// rejected; feeds a policy's adaptive speculation threshold.
	WorkflowSuggestionFeedback Type = "workflow.suggestion.feedback.v1"
	// MemoryRetrieved: a memory was returned by a search (a usage).
	MemoryRetrieved Type = "memory.retrieved.v1"
)

// Derived event types, written by processors only.
const (
	// EvaluationCompleted: the FLUX evaluation of a session.
	EvaluationCompleted Type = "evaluation.completed.v1"
	// ClockTick: the service's clock, the time source of decay. Written by
	// the service only.
	ClockTick Type = "clock.tick.v1"
	// MemoryConfidenceChanged: a memory's confidence moved.
	MemoryConfidenceChanged Type = "memory.confidence.changed.v1"
	// MemoryPruned: a memory fell below the prune threshold.
	MemoryPruned Type = "memory.pruned.v1"
	// DistillationCompleted: the LLM distiller's raw model answer.
	DistillationCompleted Type = "distillation.completed.v1"
	// JudgeCompleted: the critic's and judge's raw answers for one judge
	// criterion of a session.
	JudgeCompleted Type = "judge.completed.v1"
	// GraphEdgeLearned: a tool-graph edge was first observed or its
	// confidence crossed 0.7 or 0.85 (GraphRAG design).
	GraphEdgeLearned Type = "graph.edge.learned.v1"
	// GraphRanksUpdated: tool-graph PageRank and communities recomputed.
	GraphRanksUpdated Type = "graph.ranks.updated.v1"
	// PatternCounted: the sessions processor counted an evaluated session
	// toward the coordination pattern of its tool sequence (or re-counted it
	// after a re-score). Keyed by the pattern, so the patterns processor
	// aggregates sessions of every partition in the order the log fixes.
	PatternCounted Type = "coordination.pattern.counted.v1"
	// ToolTransitionObserved: a tool call of a workflow, with the tool
	// called before it in the same workflow (none for its first call), as
	// the tool graph's keyed transitions processor saw it on
	// chronicle.sessions. Keyed by the scope's tool graph
	// (EntityKey(scope, "toolgraph")) on chronicle.toolgraph, so the tool
	// graph, an aggregate over the sessions of every partition, is a
	// function of one ordered log per scope.
	ToolTransitionObserved Type = "tool.transition.observed.v1"
	// PairContextRetrieved: the success patterns PAIR retrieval found for
	// the gaps of a session below composite 95 (the pair worker).
	PairContextRetrieved Type = "pair.context.retrieved.v1"
	// PairRevisionWritten: the model's answer to the PAIR revision prompt
	// for a session's context, or the error of the call (the pair revision
	// worker, only with an LLM configured).
	PairRevisionWritten Type = "pair.revision.written.v1"
	// MemoryCreated: a recording (memory.recorded.v1, explicit or
	// distilled) entered the memory bank, either as a new memory or, when
	// its normalised title and content equal an existing memory's of the
	// same scope, as evidence merged into that one (merged_into). Written
	// by the memory bank in the batch that applies the recording, for
	// subscribers of chronicle.learned (MemoryCreatedData).
	MemoryCreated Type = "memory.created.v1"
	// PatternChanged: a coordination pattern was created or its counts
	// moved (a session counted toward it, or its verdict changed); the
	// pattern as it now stands. Written by the patterns processor in the
	// batch that applies the coordination.pattern.counted.v1
	// (PatternChangedData).
	PatternChanged Type = "coordination.pattern.changed.v1"
)

// LearnedTypes are the types on TopicLearned, the topic subscribers
// follow (also as Server-Sent Events, GET /v1/learned/stream), in the
// order the README's event table lists them.
var LearnedTypes = []Type{MemoryCreated, MemoryConfidenceChanged, MemoryPruned, PatternChanged, GraphEdgeLearned, GraphRanksUpdated, PairContextRetrieved, PairRevisionWritten}

// Topic is the name of a Kafka topic Chronicle uses.
type Topic string

// Topics. Every topic is created at start with the configured partitions.
const (
	// TopicSessions holds the session-scoped producer events (coordination.*,
	// reasoning.*, workflow.*), keyed by session id.
	TopicSessions Topic = "chronicle.sessions"
	// TopicMemories holds the memory bank's input: memory.* producer
	// events, distilled memory.recorded.v1 and clock.tick.v1, keyed by
	// memory id ("clock" for ticks).
	TopicMemories Topic = "chronicle.memories"
	// TopicEvaluations holds evaluation.completed.v1, keyed by session id.
	TopicEvaluations Topic = "chronicle.evaluations"
	// TopicPatterns holds coordination.pattern.counted.v1, keyed by the
	// pattern (scope "/" pattern id): a repartition topic, so that the
	// coordination patterns, an aggregate over sessions of every partition,
	// are a function of one ordered log per pattern.
	TopicPatterns Topic = "chronicle.patterns"
	// TopicToolgraph holds tool.transition.observed.v1, keyed by the
	// scope's tool graph (EntityKey(scope, "toolgraph")): a repartition
	// topic, so that each scope's tool graph (PageRank and communities span
	// all of its tools) is a function of one ordered log. Every instance
	// reads all of its partitions (a global table).
	TopicToolgraph Topic = "chronicle.toolgraph"
	// TopicLearned is the learned-patterns topic downstream consumers
	// subscribe to (LearnedTypes): new memories, confidence changes,
	// prunes, coordination-pattern changes, tool-graph edges/ranks, PAIR
	// contexts and revisions, keyed by the EntityKey of the memory,
	// pattern or session, or by EntityKey(scope, tool id) and
	// EntityKey(scope, "toolgraph") for the tool graph of a scope.
	TopicLearned Topic = "chronicle.learned"
	// TopicWorkflows holds the workflow family (reducer updates,
	// checkpoints, commands, decisions, forks, resumes, completions),
	// keyed by events.EntityKey(scope, workflow_id) whatever the event's
	// sessionid, so all of a workflow's events share a partition and a
	// checkpoint's position names one point of that workflow's history.
	// workflow.task.completed.v1 stays on TopicSessions: the tool graph
	// and the FLUX evaluator read a session's calls in its order there.
	TopicWorkflows Topic = "chronicle.workflows"
	// TopicSearches holds the tree-search family (search.*), keyed by
	// EntityKey(scope, search_id) whatever the sessionid attribute says, so
	// every event of one search shares a partition and a search never
	// creates a session.
	TopicSearches Topic = "chronicle.searches"
	// TopicReasoning holds the reasoning family (reasoning.pass.completed.v1),
	// keyed by the EntityKey of the reasoning task (data task_id, else the
	// sessionid), so all passes of one task share a partition in order.
	TopicReasoning Topic = "chronicle.reasoning"
	// TopicDeadLetter receives events that failed processing, with the error
	// and the original topic, partition and offset in headers.
	TopicDeadLetter Topic = "chronicle.deadletter"
)

// SinglePartition lists the topics created with exactly one partition
// whatever the configured count: their consumers keep state across keys
// (the memory bank merges duplicates across memories and decays all of them
// at a tick), which is a deterministic function of the log only when the
// topic is one totally ordered stream.
var SinglePartition = map[Topic]bool{TopicMemories: true}

// AllTopics lists every topic in creation order.
var AllTopics = []Topic{TopicSessions, TopicMemories, TopicEvaluations, TopicPatterns, TopicToolgraph, TopicLearned, TopicWorkflows, TopicSearches, TopicReasoning, TopicDeadLetter}

// TypeInfo says where an event type lives and how it is keyed.
type TypeInfo struct {
	Type    Type
	Topic   Topic
	Derived bool // written by processors only; rejected from producers
	// KeyField names the data field used as record key when the envelope
	// has no sessionid ("" means sessionid is required, "-" a constant key).
	KeyField string
	// KeyFirst: the key field names the entity even when the envelope
	// has a sessionid (a reasoning task's passes may belong to sessions);
	// without the field the sessionid is the key.
	KeyFirst bool
	// KeyOver names a data field that, when present and not empty, names
	// the entity instead of KeyField: memory.created.v1's merged_into (a
	// recording merged into memory m is an event of m, on m's partition
	// with m's other learned events; keyed by its own memory_id, it sat
	// on another partition, so a consumer applying partitions apart could
	// end with m's evidence behind: a subscriber walkthrough, 2026-12-03).
	KeyOver string
}

var registry = map[Type]TypeInfo{
	SessionStarted:             {Type: SessionStarted, Topic: TopicSessions},
	MinuteRecorded:             {Type: MinuteRecorded, Topic: TopicSessions},
	SessionCompleted:           {Type: SessionCompleted, Topic: TopicSessions},
	ReasoningPassCompleted:     {Type: ReasoningPassCompleted, Topic: TopicReasoning, KeyField: "task_id", KeyFirst: true},
	SearchNodeExpanded:         {Type: SearchNodeExpanded, Topic: TopicSearches, KeyField: "search_id"},
	SearchStarted:              {Type: SearchStarted, Topic: TopicSearches, KeyField: "search_id"},
	SearchQuotaReserved:        {Type: SearchQuotaReserved, Topic: TopicSearches, KeyField: "search_id"},
	SearchFrontierDecided:      {Type: SearchFrontierDecided, Topic: TopicSearches, KeyField: "search_id"},
	SearchPaused:               {Type: SearchPaused, Topic: TopicSearches, KeyField: "search_id"},
	SearchResumed:              {Type: SearchResumed, Topic: TopicSearches, KeyField: "search_id"},
	SearchCompleted:            {Type: SearchCompleted, Topic: TopicSearches, KeyField: "search_id"},
	SearchBranchCompleted:      {Type: SearchBranchCompleted, Topic: TopicSearches, KeyField: "search_id"},
	SearchConsensusReduced:     {Type: SearchConsensusReduced, Topic: TopicSearches, KeyField: "search_id"},
	SolverLocked:               {Type: SolverLocked, Topic: TopicSearches, KeyField: "search_id"},
	SearchCandidateCorrected:   {Type: SearchCandidateCorrected, Topic: TopicSearches, KeyField: "search_id"},
	WorkflowTaskCompleted:      {Type: WorkflowTaskCompleted, Topic: TopicSessions, KeyField: "workflow_id"},
	WorkflowReducerApplied:     {Type: WorkflowReducerApplied, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowCheckpointSaved:    {Type: WorkflowCheckpointSaved, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowCommandEnqueued:    {Type: WorkflowCommandEnqueued, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowDecisionRequested:  {Type: WorkflowDecisionRequested, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowDecisionAnswered:   {Type: WorkflowDecisionAnswered, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowForked:             {Type: WorkflowForked, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowResumed:            {Type: WorkflowResumed, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowCompleted:          {Type: WorkflowCompleted, Topic: TopicWorkflows, KeyField: "workflow_id"},
	WorkflowSuggestionFeedback: {Type: WorkflowSuggestionFeedback, Topic: TopicWorkflows, KeyField: "policy"},
	MemoryRecorded:             {Type: MemoryRecorded, Topic: TopicMemories, KeyField: "memory_id"},
	MemoryFeedback:             {Type: MemoryFeedback, Topic: TopicMemories, KeyField: "memory_id"},
	MemoryRetrieved:            {Type: MemoryRetrieved, Topic: TopicMemories, KeyField: "memory_id"},
	ClockTick:                  {Type: ClockTick, Topic: TopicMemories, Derived: true, KeyField: "-"},
	MemoryConfidenceChanged:    {Type: MemoryConfidenceChanged, Topic: TopicLearned, Derived: true, KeyField: "memory_id"},
	MemoryPruned:               {Type: MemoryPruned, Topic: TopicLearned, Derived: true, KeyField: "memory_id"},
	DistillationCompleted:      {Type: DistillationCompleted, Topic: TopicMemories, Derived: true, KeyField: "session_id"},
	JudgeCompleted:             {Type: JudgeCompleted, Topic: TopicSessions, Derived: true, KeyField: "session_id"},
	GraphEdgeLearned:           {Type: GraphEdgeLearned, Topic: TopicLearned, Derived: true, KeyField: "from"},
	GraphRanksUpdated:          {Type: GraphRanksUpdated, Topic: TopicLearned, Derived: true, KeyField: "graph"},
	ToolTransitionObserved:     {Type: ToolTransitionObserved, Topic: TopicToolgraph, Derived: true, KeyField: "graph"},
	PairContextRetrieved:       {Type: PairContextRetrieved, Topic: TopicLearned, Derived: true, KeyField: "session_id"},
	PairRevisionWritten:        {Type: PairRevisionWritten, Topic: TopicLearned, Derived: true, KeyField: "session_id"},
	MemoryCreated:              {Type: MemoryCreated, Topic: TopicLearned, Derived: true, KeyField: "memory_id", KeyOver: "merged_into"},
	PatternChanged:             {Type: PatternChanged, Topic: TopicLearned, Derived: true, KeyField: "pattern_id"},
	EvaluationCompleted:        {Type: EvaluationCompleted, Topic: TopicEvaluations, Derived: true, KeyField: "session_id"},
	PatternCounted:             {Type: PatternCounted, Topic: TopicPatterns, Derived: true, KeyField: "pattern_id"},
}

// CheckTopic returns a *ValidationError when e's type does not live on
// topic (a record written straight to Kafka onto the wrong topic): its
// consumers dead-letter it with that reason instead of applying it.
func CheckTopic(e *Envelope, topic Topic) error {
	ti, ok := registry[e.Type]
	if !ok {
		return &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("unknown event type %q", e.Type)}
	}
	if ti.Topic != topic {
		return &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("%s belongs on topic %s, not %s", e.Type, ti.Topic, topic)}
	}
	return nil
}

// Lookup returns the TypeInfo of t and whether t is known.
func Lookup(t Type) (TypeInfo, bool) {
	ti, ok := registry[t]
	return ti, ok
}

// Types returns every known type, sorted.
func Types() []Type {
	out := make([]Type, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ProducerTypes returns, sorted, the types a producer may send: every
// registered type but the derived ones, which only Chronicle's processors
// write (ErrDerivedType).
func ProducerTypes() []Type {
	out := make([]Type, 0, len(registry))
	for _, t := range Types() {
		if !registry[t].Derived {
			out = append(out, t)
		}
	}
	return out
}

// TypeList is ts as a message names them: "a, b, c" (fmt's %v wrote Go's
// "[a b c]" into error texts).
func TypeList(ts []Type) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(t))
	}
	return b.String()
}

// SchemaURI is the dataschema attribute of type t.
func SchemaURI(t Type) string { return "urn:chronicle:schema:" + string(t) }

// Key returns the record key of e: the EntityKey (scope "/" id) of the
// entity the event belongs to — its session for events of
// chronicle.sessions that carry one, else the type's key field
// (memory_id, workflow_id, search_id, session_id, pattern_id: families on
// their own topics are keyed by their entity whatever their sessionid) —
// and "clock" for clock ticks. Scope is part of the key, so an event of one
// scope can never reach another scope's entity, and all events of one
// entity share a partition. The id must pass CheckID.
func Key(e *Envelope) (string, error) { return keyWith(e, dataString) }

// dataLookup finds the data member name of an event as dataString does.
type dataLookup func(data []byte, name string) (k string, obj, present, str bool)

// keyWith is Key with the data member lookup given (parseFast passes one on
// its own parse of the event).
func keyWith(e *Envelope, lookup dataLookup) (string, error) {
	id, err := entityIDWith(e, lookup)
	if ti := registry[e.Type]; err != nil || ti.KeyField == "-" {
		return id, err
	}
	return EntityKey(e.EffectiveScope(), id), nil
}

// EntityID returns the id (without scope) of the entity e belongs to: the
// session id for session-scoped events, else the type's key field, and
// "clock" for clock ticks. Errors name the attribute or data field.
func EntityID(e *Envelope) (string, error) { return entityIDWith(e, dataString) }

func entityIDWith(e *Envelope, lookup dataLookup) (string, error) {
	ti, ok := registry[e.Type]
	if !ok {
		return "", &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("unknown event type %q", e.Type)}
	}
	if ti.KeyFirst {
		if k, ok, err := keyField(e, ti.KeyField, lookup); err != nil || ok {
			return k, err
		}
	}
	if ti.KeyOver != "" {
		if k, ok, err := keyField(e, ti.KeyOver, lookup); err != nil || ok {
			return k, err
		}
	}
	if (ti.Topic == TopicSessions || ti.Topic == TopicReasoning) && e.SessionID != "" {
		if err := CheckID(e.SessionID); err != nil {
			return "", &ValidationError{Index: -1, Pointer: "/sessionid", Reason: err.Error()}
		}
		return e.SessionID, nil
	}
	if ti.KeyField == "-" {
		return "clock", nil
	}
	if ti.KeyField == "" {
		return "", &ValidationError{Index: -1, Pointer: "/sessionid", Reason: fmt.Sprintf("required for %s", e.Type)}
	}
	k, obj, present, str := lookup(e.Data, ti.KeyField)
	if !obj {
		return "", &ValidationError{Index: -1, Pointer: "/data", Reason: "not a JSON object"}
	}
	if !present || !str || k == "" {
		reason := "required as record key"
		if ti.Topic == TopicSessions || ti.Topic == TopicReasoning {
			// the sessionid attribute would have done, and the producer
			// may have meant to send it
			reason = "required as record key when the event has no sessionid attribute"
		}
		return "", &ValidationError{Index: -1, Pointer: "/data/" + ti.KeyField, Reason: reason}
	}
	if err := CheckID(k); err != nil {
		return "", &ValidationError{Index: -1, Pointer: "/data/" + ti.KeyField, Reason: err.Error()}
	}
	return k, nil
}

// keyField returns the data field name of e as an entity id when present
// (ok true), checked with CheckID; absent or empty: ok false.
func keyField(e *Envelope, name string, lookup dataLookup) (string, bool, error) {
	k, obj, present, str := lookup(e.Data, name)
	if !obj {
		return "", false, &ValidationError{Index: -1, Pointer: "/data", Reason: "not a JSON object"}
	}
	if !present {
		return "", false, nil
	}
	if !str {
		return "", false, &ValidationError{Index: -1, Pointer: "/data/" + name, Reason: "not a string"}
	}
	if k == "" {
		return "", false, nil
	}
	if err := CheckID(k); err != nil {
		return "", false, &ValidationError{Index: -1, Pointer: "/data/" + name, Reason: err.Error()}
	}
	return k, true, nil
}

// AuthorMember is the top-level data member naming who wrote an event of
// type t, "" for a type without one: memory.feedback.v1 and
// memory.retrieved.v1 "source", memory.recorded.v1 and
// coordination.session.started.v1 "recorded_by", search.resumed.v1 and
// workflow.decision.answered.v1 "by" (who made a human decision).
// The HTTP API sets it from the caller's token when the producer left it
// out, so it is no part of what the producer sent: the content hash of the
// idempotency check (projections.ContentHash) leaves it out.
func AuthorMember(t Type) string {
	switch t {
	case MemoryFeedback, MemoryRetrieved:
		return "source"
	case MemoryRecorded, SessionStarted:
		return "recorded_by"
	case SearchResumed, WorkflowDecisionAnswered:
		return "by"
	}
	return ""
}
