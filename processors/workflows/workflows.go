// Package workflows is the processor of the workflow family (PML design:
// WorkflowState with reducers, a checkpoint per DAG layer, a command queue,
// agent and human decision points): it projects each workflow's state from
// the events of chronicle.workflows and keeps every checkpoint.
//
// A checkpoint's id is the log position (topic:partition:offset) of its
// workflow.checkpoint.saved.v1 event. The state saved with it is the state
// after that event, so "the state as of a checkpoint" is exactly what
// `chronicle replay --until <checkpoint id>` rebuilds (a test checks the
// equality).
//
// Projection rows (under p/workflows/), <key> = events.EntityKey(scope,
// workflow id):
//
//	s/<key>                   State
//	cp/<key>/<seq, 6 digits>  Checkpoint: seq, event id, layer, time, the State with its large fields named by hash
//	cb/<key>/<SHA-256, hex>   one value of a large State field of a checkpoint (checkpointrow.go)
//	ce/<key>/<event id>       the seq of the checkpoint saved by that event
//	cpid/<key>/<seq, 6 digits> the checkpoint's id: the log position (topic:partition:offset) of its event
//	ev/<key>/<event id>       the workflow's event count after that event (the event was applied)
//	i/<id>\x00<scope>         index from a bare id to the scopes that hold it (empty value)
//	th/<policy key>           Policy: an adaptive speculation threshold (key = EntityKey(scope, policy))
//	sg/<policy key>/<suggestion id> the event id that gave the suggestion's feedback
//
// In ce/, ev/ and sg/ an id that holds '/' follows its key after a 0 byte
// instead of '/' (keyID).
//
// Apply reads and writes only the rows of the workflow its event's key
// names; a fork carries the parent's state in the event.
package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "workflows"

// Workflow statuses.
const (
	// StatusRunning: no decision is pending.
	StatusRunning = "running"
	// StatusWaitingForHuman: a human (HIL) decision is pending; the
	// executor must not start the next layer (LangGraph's interrupt).
	StatusWaitingForHuman = "waiting_for_human"
	// StatusWaitingForAgent: only agent (AIL) decisions are pending.
	StatusWaitingForAgent = "waiting_for_agent"
	// StatusCompleted: workflow.completed.v1 was applied; later events of
	// the workflow are rejected.
	StatusCompleted = "completed"
)

// State is a workflow's state (PML design: WorkflowState {messages, tasks,
// decisions, context, checkpoint_id} and a checkpoint's state {workflow_id,
// current_layer, tasks, decisions, pending commands, messages, context}),
// plus its status and counters.
type State struct {
	WorkflowID   string `json:"workflow_id"`
	Scope        string `json:"scope"`
	Status       string `json:"status"`
	CurrentLayer int    `json:"current_layer"`
	// Messages, Tasks and Decisions are the append channels, in log order.
	Messages  []json.RawMessage `json:"messages"`
	Tasks     []json.RawMessage `json:"tasks"`
	Decisions []json.RawMessage `json:"decisions"`
	// Context is the merge channel.
	Context map[string]json.RawMessage `json:"context"`
	// PendingCommands is the command queue, oldest first.
	PendingCommands []Command `json:"pending_commands"`
	// PendingDecisions are the decision points not answered yet.
	PendingDecisions []Decision `json:"pending_decisions"`
	// DAG is the running DAG: absent until a checkpoint processes the
	// first replan_dag command, then grown by each (replan.go).
	DAG *RunningDAG `json:"dag,omitempty"`
	// Checkpoint is the last checkpoint saved (or resumed from); the HTTP
	// API adds its id (log position) as checkpoint_id.
	Checkpoint *CheckpointRef `json:"checkpoint,omitempty"`
	// Checkpoints counts the checkpoints saved; the next one gets this
	// number as seq.
	Checkpoints int `json:"checkpoints"`
	// Resumes counts workflow.resumed.v1 events applied.
	Resumes int `json:"resumes,omitempty"`
	// Parent is where a forked workflow came from.
	Parent *Parent `json:"parent,omitempty"`
	// Outcome and Output are set by workflow.completed.v1.
	Outcome string          `json:"outcome,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	// Events counts the events applied; StartedAt and UpdatedAt are the
	// times of the first and the last.
	Events    int    `json:"events"`
	StartedAt string `json:"started_at"`
	UpdatedAt string `json:"updated_at"`
	// Position is the log position (topic:partition:offset) of the last
	// event applied to the state: what `chronicle replay --until` takes
	// to rebuild the store as of this state (in a checkpoint's state, the
	// checkpoint event's own: the saved state is the state after it).
	// Absent in a row written before the processor kept it.
	Position string `json:"position,omitempty"`
}

// Key is the workflow's events.EntityKey.
func (s State) Key() string { return events.EntityKey(s.Scope, s.WorkflowID) }

// fillEmpty makes the list channels, the context and the queues empty
// instead of nil, so that a state (its row, its checkpoints, the HTTP
// answers) says "messages": [] rather than null, which a client reading a
// list would have to special-case. A state stored before keeps its nulls
// until its next event.
func (s *State) fillEmpty() {
	if s.Messages == nil {
		s.Messages = []json.RawMessage{}
	}
	if s.Tasks == nil {
		s.Tasks = []json.RawMessage{}
	}
	if s.Decisions == nil {
		s.Decisions = []json.RawMessage{}
	}
	if s.Context == nil {
		s.Context = map[string]json.RawMessage{}
	}
	if s.PendingCommands == nil {
		s.PendingCommands = []Command{}
	}
	if s.PendingDecisions == nil {
		s.PendingDecisions = []Decision{}
	}
}

// Command is a queued command (PML design: command queue).
type Command struct {
	CommandID  string          `json:"command_id"`
	Command    string          `json:"command"`
	Args       json.RawMessage `json:"args,omitempty"`
	By         string          `json:"by,omitempty"`
	EnqueuedAt string          `json:"enqueued_at"`
	// EnqueuedEvent is the workflow's event count (State.Events) once
	// the command was enqueued: a resume keeps a pending command that
	// came after the checkpoint (a count above the checkpoint state's),
	// and only such. 0 for a command enqueued before the field existed.
	EnqueuedEvent int `json:"enqueued_event,omitempty"`
}

// Decision is a decision point, pending or (in the decisions channel)
// answered.
type Decision struct {
	DecisionID  string   `json:"decision_id"`
	Kind        string   `json:"kind"`
	Layer       int      `json:"layer"`
	Question    string   `json:"question"`
	Options     []string `json:"options,omitempty"`
	RequestedAt string   `json:"requested_at"`
	Answer      string   `json:"answer,omitempty"`
	By          string   `json:"by,omitempty"`
	Comment     string   `json:"comment,omitempty"`
	AnsweredAt  string   `json:"answered_at,omitempty"`
}

// CheckpointRef names a checkpoint inside the projection: its sequence
// number in the workflow, the id of its event, its layer and time.
type CheckpointRef struct {
	Seq     int    `json:"seq"`
	EventID string `json:"event_id"`
	Layer   int    `json:"layer"`
	Time    string `json:"time"`
}

// Parent is the origin of a forked workflow.
type Parent struct {
	WorkflowID   string `json:"workflow_id"`
	CheckpointID string `json:"checkpoint_id"`
}

// Checkpoint is a saved checkpoint (PML design: {id, workflow_id,
// timestamp, layer, state}); its id is the log position of its event,
// which only the log knows (History resolves it).
type Checkpoint struct {
	CheckpointRef
	State State `json:"state"`
}

// Processor is the workflows processor.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicWorkflows} }

// StatePerKey implements processors.KeyedState: every row is the
// workflow's (or the suggestion policy's) own, named by its record key.
func (Processor) StatePerKey() bool { return true }

func stateKey(key string) string               { return "s/" + key }
func checkpointKey(key string, seq int) string { return "cp/" + key + "/" + projections.SeqKey(seq) }
func checkpointPrefix(key string) string       { return "cp/" + key + "/" }
func checkpointEventKey(key, id string) string { return "ce/" + keyID(key, id) }
func checkpointIDKey(key string, seq int) string {
	return "cpid/" + key + "/" + projections.SeqKey(seq)
}
func checkpointIDPrefix(key string) string { return "cpid/" + key + "/" }
func eventKey(key, id string) string       { return "ev/" + keyID(key, id) }

// keyID joins an entity key and an event or suggestion id into the rest
// of a row name: key "/" id when the id holds no '/' (the id is the last
// segment, so the name is unambiguous, and such rows keep the layout they
// always had), else key "\x00" id (a key never holds a 0 byte). With "/"
// for every id, workflow "w" with event id "x/e1" and workflow "w/x" with
// event id "e1" shared one row: the second was taken for a retry of the
// first, or refused as a reused checkpoint id (found by a walkthrough).
// A data directory that applied an event id with '/' before holds its row
// under the old name: rebuild it (replay --into) to look it up again.
func keyID(key, id string) string {
	if strings.Contains(id, "/") {
		return key + "\x00" + id
	}
	return key + "/" + id
}

var idIndexKey = projections.IDIndexKey

func keyOf(env *events.Envelope) (string, error) { return events.Key(env) }

// Processing errors (dead-lettered with the reason).
var (
	// ErrCompleted: an event for a workflow that already completed.
	ErrCompleted = errors.New("workflow already completed")
	// ErrUnknownCheckpoint: a resume naming a checkpoint event the
	// workflow never saved.
	ErrUnknownCheckpoint = errors.New("unknown checkpoint")
	// ErrExists: a fork into a workflow id that already has events.
	ErrExists = errors.New("workflow already exists")
	// ErrNotPending: an answer to a decision, or a processed command,
	// that is not pending.
	ErrNotPending = errors.New("not pending")
	// ErrDuplicateID: a command or decision id already pending, or a
	// checkpoint event id already used by the workflow.
	ErrDuplicateID = errors.New("id already in use")
)

// Apply implements processors.Processor.
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	key, err := keyOf(env)
	if err != nil {
		return err
	}
	if env.Type == events.WorkflowSuggestionFeedback {
		return applyFeedback(tx, key, env) // key names a policy, not a workflow
	}
	scope, id, _ := events.SplitEntityKey(key)
	var s State
	ok, err := tx.GetJSON(stateKey(key), &s)
	if err != nil {
		return err
	}
	if !ok {
		s = State{WorkflowID: id, Scope: scope, Status: StatusRunning, StartedAt: env.TimeUTC()}
		if env.Type != events.WorkflowForked {
			if err := tx.Set(idIndexKey(id, scope), nil); err != nil {
				return err
			}
		}
	} else if s.Status == StatusCompleted {
		return fmt.Errorf("workflow %s: %s: %w", key, env.Type, ErrCompleted)
	}
	s.fillEmpty()
	stampPosition(tx, &s) // before a checkpoint saves the state as of this event
	switch env.Type {
	case events.WorkflowReducerApplied:
		var d events.ReducerAppliedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if err := Reduce(&s, d.Channel, d.Update); err != nil {
			return fmt.Errorf("workflow %s: %w", key, err)
		}
		s.CurrentLayer = max(s.CurrentLayer, d.Layer)
	case events.WorkflowCommandEnqueued:
		var d events.CommandEnqueuedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if slices.ContainsFunc(s.PendingCommands, func(c Command) bool { return c.CommandID == d.CommandID }) {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/command_id", "%q: %w (pending)", d.CommandID, ErrDuplicateID))
		}
		if d.Command == events.CommandReplanDAG {
			if _, err := parseReplan(d.Args); err != nil {
				return fmt.Errorf("workflow %s: %w", key, err)
			}
		}
		s.PendingCommands = append(s.PendingCommands, Command{CommandID: d.CommandID, Command: d.Command, Args: compactOrNil(d.Args), By: d.By, EnqueuedAt: env.TimeUTC(), EnqueuedEvent: s.Events + 1})
	case events.WorkflowDecisionRequested:
		var d events.DecisionRequestedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if slices.ContainsFunc(s.PendingDecisions, func(x Decision) bool { return x.DecisionID == d.DecisionID }) {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/decision_id", "%q: %w (pending)", d.DecisionID, ErrDuplicateID))
		}
		s.PendingDecisions = append(s.PendingDecisions, Decision{DecisionID: d.DecisionID, Kind: d.Kind, Layer: d.Layer, Question: d.Question, Options: d.Options, RequestedAt: env.TimeUTC()})
	case events.WorkflowDecisionAnswered:
		var d events.DecisionAnsweredData
		if err := env.Decode(&d); err != nil {
			return err
		}
		i := slices.IndexFunc(s.PendingDecisions, func(x Decision) bool { return x.DecisionID == d.DecisionID })
		if i < 0 {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/decision_id", "%q: %w", d.DecisionID, ErrNotPending))
		}
		dec := s.PendingDecisions[i]
		s.PendingDecisions = slices.Delete(s.PendingDecisions, i, i+1)
		dec.Answer, dec.By, dec.Comment, dec.AnsweredAt = d.Answer, d.By, d.Comment, env.TimeUTC()
		raw, err := json.Marshal(dec)
		if err != nil {
			return err
		}
		s.Decisions = append(s.Decisions, raw) // the decisions channel appends
	case events.WorkflowCheckpointSaved:
		var d events.CheckpointSavedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if _, used, err := tx.Get(checkpointEventKey(key, env.ID)); err != nil {
			return err
		} else if used {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/id", "checkpoint event %q: %w", env.ID, ErrDuplicateID))
		}
		for j, cid := range d.ProcessedCommands {
			// a command named twice is a bad list, not a command that is
			// not pending (its second lookup found it processed by the
			// first; found by a new user's walkthrough)
			if k := slices.Index(d.ProcessedCommands[:j], cid); k >= 0 {
				return fmt.Errorf("workflow %s: %w", key, fieldError(fmt.Sprintf("/data/processed_commands/%d", j), "%q is named twice (also at %d)", cid, k))
			}
			i := slices.IndexFunc(s.PendingCommands, func(c Command) bool { return c.CommandID == cid })
			if i < 0 {
				return fmt.Errorf("workflow %s: %w", key, fieldError("/data/processed_commands", "%q: %w", cid, ErrNotPending))
			}
			if c := s.PendingCommands[i]; c.Command == events.CommandReplanDAG {
				// the executor handled the replan between layers: its
				// plan, written with the command, joins the DAG now
				if err := applyReplan(&s, c, d.Layer); err != nil {
					return fmt.Errorf("workflow %s: %w", key, err)
				}
			}
			s.PendingCommands = slices.Delete(s.PendingCommands, i, i+1)
		}
		s.CurrentLayer = d.Layer
		ref := CheckpointRef{Seq: s.Checkpoints, EventID: env.ID, Layer: d.Layer, Time: env.TimeUTC()}
		s.Checkpoint = &ref
		s.Checkpoints++
		finish(&s, env)
		// the saved state is the state after this event: what a replay
		// --until this event's position rebuilds
		if err := putCheckpoint(tx, key, Checkpoint{CheckpointRef: ref, State: s}); err != nil {
			return err
		}
		if err := tx.Set(checkpointEventKey(key, env.ID), []byte(strconv.Itoa(ref.Seq))); err != nil {
			return err
		}
		// the checkpoint's id is its event's position, which the live
		// engine and a replay both give (Tx.Position): kept here, a
		// resume to the last checkpoint, a state read and the history
		// name it without reading the log back (before, a resume without
		// checkpoint_id scanned the partition, a cost that grew with
		// the log). A dry run (Service.Check) has no position.
		if pos := tx.Position(); pos.Topic != "" {
			if err := tx.Set(checkpointIDKey(key, ref.Seq), []byte(pos.String())); err != nil {
				return err
			}
		}
		return save(tx, key, env, &s)
	case events.WorkflowResumed:
		var d events.ResumedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		seq, ok, err := tx.Get(checkpointEventKey(key, d.CheckpointEventID))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/checkpoint_event_id", "%q: %w", d.CheckpointEventID, ErrUnknownCheckpoint))
		}
		n, _ := strconv.Atoi(string(seq))
		cp, ok, err := getCheckpoint(tx.Get, key, n)
		if err != nil || !ok {
			return fmt.Errorf("workflow %s: checkpoint %d: row missing (%v)", key, n, err)
		}
		prev := s
		s = cp.State
		// counters move on: a later checkpoint must not reuse a seq
		s.Checkpoints, s.Events, s.Resumes, s.StartedAt = prev.Checkpoints, prev.Events, prev.Resumes+1, prev.StartedAt
		// the command queue is an inbox, not the executor's state: a
		// command enqueued after the checkpoint and still pending when
		// the workflow resumes stays queued, after the checkpoint's own.
		// Before, the queue was the checkpoint's, so a human's abort
		// enqueued after the last checkpoint vanished when the crashed
		// executor resumed (a walkthrough). A command enqueued before the
		// checkpoint is pending after the resume only if the checkpoint
		// had it pending (one it processed stays processed, even when an
		// earlier rewind made it pending again: a review).
		for _, c := range prev.PendingCommands {
			if c.EnqueuedEvent > cp.State.Events && !slices.ContainsFunc(s.PendingCommands, func(x Command) bool { return x.CommandID == c.CommandID }) {
				s.PendingCommands = append(s.PendingCommands, c)
			}
		}
	case events.WorkflowForked:
		if ok {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/workflow_id", "%w (a fork starts a new workflow)", ErrExists))
		}
		var d events.ForkedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		var parent State
		if err := json.Unmarshal(d.State, &parent); err != nil {
			return fmt.Errorf("workflow %s: %w", key, fieldError("/data/state", "%v", err))
		}
		s = State{WorkflowID: id, Scope: scope, CurrentLayer: parent.CurrentLayer,
			Messages: parent.Messages, Tasks: parent.Tasks, Decisions: parent.Decisions, Context: parent.Context,
			PendingCommands: parent.PendingCommands, PendingDecisions: parent.PendingDecisions, DAG: parent.DAG,
			Parent: &Parent{WorkflowID: d.ParentWorkflowID, CheckpointID: d.ParentCheckpointID}, StartedAt: env.TimeUTC()}
		for _, ch := range []string{events.ChannelMessages, events.ChannelTasks, events.ChannelDecisions, events.ChannelContext} {
			if u, has := d.Update[ch]; has {
				if err := Reduce(&s, ch, u); err != nil {
					return fmt.Errorf("workflow %s: %w", key, fieldError("/data/update/"+ch, "%w", err))
				}
			}
		}
		if err := tx.Set(idIndexKey(id, scope), nil); err != nil {
			return err
		}
	case events.WorkflowCompleted:
		var d events.WorkflowCompletedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		finish(&s, env)
		s.Status, s.Outcome, s.Output = StatusCompleted, d.Outcome, compactOrNil(d.Output)
		return save(tx, key, env, &s)
	default:
		return fmt.Errorf("workflows: /type: %s is not a workflow event this processor applies", env.Type)
	}
	finish(&s, env)
	return save(tx, key, env, &s)
}

// finish counts the event and recomputes the status from the pending
// decisions.
func finish(s *State, env *events.Envelope) {
	s.Events++
	s.UpdatedAt = env.TimeUTC()
	s.Status = StatusRunning
	for _, d := range s.PendingDecisions {
		if d.Kind == events.DecisionHuman {
			s.Status = StatusWaitingForHuman
			break
		}
		s.Status = StatusWaitingForAgent
	}
}

func save(tx *projections.Tx, key string, env *events.Envelope, s *State) error {
	if err := tx.Set(eventKey(key, env.ID), []byte(strconv.Itoa(s.Events))); err != nil {
		return err
	}
	s.fillEmpty()
	stampPosition(tx, s) // again: a resume or fork restored a checkpoint's state
	return tx.SetJSON(stateKey(key), s)
}

// stampPosition sets s.Position to the position of the event being
// applied, the same live and in a replay (Tx.Position); a dry run
// (Service.Check) has none and leaves it.
func stampPosition(tx *projections.Tx, s *State) {
	if pos := tx.Position(); pos.Topic != "" {
		s.Position = pos.String()
	}
}

func compactOrNil(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return compact(v)
}

// FieldError is a rejection that names the field of the event it refuses:
// Pointer is a JSON pointer into the event (e.g. "/data/decision_id",
// "/id"), Err the reason, which wraps the processor's error
// (ErrDuplicateID, ErrNotPending, ...). Error reads "<pointer>: <reason>".
// Service.Check takes the pointer from it (errors.As; the outermost one
// when errors are nested).
type FieldError struct {
	Pointer string
	Err     error
}

func (e *FieldError) Error() string { return e.Pointer + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *FieldError) Unwrap() error { return e.Err }

// MemberPointer implements processors.PointerError: the dead letter of a
// refused workflow event keeps the pointer (GET /v1/deadletters' pointer;
// a raced write's letter had none: a walkthrough, 2026-11-30).
func (e *FieldError) MemberPointer() string { return e.Pointer }

func fieldError(pointer, format string, a ...any) error {
	return &FieldError{Pointer: pointer, Err: fmt.Errorf(format, a...)}
}
