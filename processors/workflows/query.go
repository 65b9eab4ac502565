package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Get returns the state of the workflow whose events.EntityKey is key; ok
// is false when the projection has no such workflow.
func Get(store *projections.Store, key string) (State, bool, error) {
	var s State
	ok, err := store.GetJSON(Name, stateKey(key), &s)
	return s, ok, err
}

// Scopes returns, sorted, the scopes that hold a workflow with the bare id.
func Scopes(store *projections.Store, id string) ([]string, error) { return store.ScopesOf(Name, id) }

// Checkpoints returns the workflow's saved checkpoints in the order they
// were saved (seq order), each with its complete state.
func Checkpoints(store *projections.Store, key string) ([]Checkpoint, error) {
	var rows [][]byte
	p := checkpointPrefix(key)
	err := store.Scan(Name, p, "", func(k string, val []byte) (bool, error) {
		if !projections.OwnRow(p, k) {
			return true, nil // a checkpoint of a workflow whose id extends this one's
		}
		rows = append(rows, append([]byte(nil), val...))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, 0, len(rows))
	for _, raw := range rows { // blobs are read after the scan, not inside it
		cp, _, err := decodeCheckpoint(storeRows(store), key, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, nil
}

// CheckpointByEvent returns the checkpoint saved by the
// workflow.checkpoint.saved.v1 event with id eventID; ok is false when the
// workflow saved none with that event (not applied yet, or rejected).
func CheckpointByEvent(store *projections.Store, key, eventID string) (Checkpoint, bool, error) {
	var cp Checkpoint
	seq, ok, err := store.Get(Name, checkpointEventKey(key, eventID))
	if err != nil || !ok {
		return cp, ok, err
	}
	n, err := strconv.Atoi(string(seq))
	if err != nil {
		return cp, false, err
	}
	return getCheckpoint(storeRows(store), key, n)
}

// CheckpointIDAt returns the id (log position, topic:partition:offset) of
// the workflow's checkpoint seq as the processor recorded it when it
// applied the checkpoint's event (the cpid/ row); ok is false for a
// checkpoint applied before the processor kept the row (a data directory
// older than it: rebuild it with replay --into to fill the rows) or no
// such checkpoint. Cost: one row read, nothing from the log.
func CheckpointIDAt(store *projections.Store, key string, seq int) (id string, ok bool, err error) {
	v, ok, err := store.Get(Name, checkpointIDKey(key, seq))
	return string(v), ok, err
}

// LastCheckpoint returns the workflow's last saved checkpoint (the one
// with the highest seq: the last in log order, as History lists them) with
// its id, from the projection: its cp/ row and its cpid/ row. ok is false
// when the workflow saved none. A checkpoint whose id row is missing (an
// older data directory) is named by CheckpointIDOf with source (one fetch
// when the routes wrote it, else one scan of the partition); an id the
// log does not show is ok false. Cost without such a row: two row reads,
// nothing from the log — before, a resume without checkpoint_id read the
// whole partition back (History), a cost that grew with the log.
func LastCheckpoint(ctx context.Context, brokers []string, store *projections.Store, key, source string) (HistoryEntry, bool, error) {
	st, ok, err := Get(store, key)
	if err != nil || !ok || st.Checkpoints == 0 {
		return HistoryEntry{}, false, err
	}
	return checkpointEntry(ctx, brokers, store, key, source, st.Checkpoints-1)
}

// CurrentCheckpoint returns the checkpoint the workflow's state stands on
// (State.Checkpoint: the last saved, or the one a resume went back to
// since) with its id, as GET /v1/workflows/{id} names it; ok is false
// when it has none. It is what a resume without checkpoint_id returns to:
// after a rewind to an earlier checkpoint, the last saved one is the state
// the rewind left, and resuming to it undid the rewind while the state
// named the earlier one (a workflows walkthrough, 2026-12-06). Cost and
// errors as LastCheckpoint's.
func CurrentCheckpoint(ctx context.Context, brokers []string, store *projections.Store, key, source string) (HistoryEntry, bool, error) {
	st, ok, err := Get(store, key)
	if err != nil || !ok || st.Checkpoint == nil {
		return HistoryEntry{}, false, err
	}
	return checkpointEntry(ctx, brokers, store, key, source, st.Checkpoint.Seq)
}

// checkpointEntry is checkpoint seq of workflow key with its id.
func checkpointEntry(ctx context.Context, brokers []string, store *projections.Store, key, source string, seq int) (HistoryEntry, bool, error) {
	cp, ok, err := getCheckpoint(storeRows(store), key, seq)
	if err != nil || !ok {
		return HistoryEntry{}, false, err
	}
	id, ok, err := CheckpointIDAt(store, key, seq)
	if err != nil {
		return HistoryEntry{}, false, err
	}
	if !ok {
		if id, err = CheckpointIDOf(ctx, brokers, store, key, source, cp.EventID); err != nil || id == "" {
			return HistoryEntry{}, false, err
		}
	}
	return HistoryEntry{CheckpointID: id, Checkpoint: cp}, true, nil
}

// Applied reports whether the workflows processor applied the event with
// id eventID to the workflow (false for one not applied yet, or rejected
// and dead-lettered).
func Applied(store *projections.Store, key, eventID string) (bool, error) {
	_, ok, err := store.Get(Name, eventKey(key, eventID))
	return ok, err
}

// View is a workflow as GET /v1/workflows/{id} answers it: the state with
// the id (log position) of its last checkpoint.
type View struct {
	State
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// WriteResult answers a workflow write over HTTP: the event written, its
// position in the log (topic:partition:offset), the checkpoint id (for a
// checkpoint: its own position; for a resume: the checkpoint resumed
// from) and the state after the event, with its checkpoint's id as GET
// /v1/workflows/{id} answers it (View: before, the state of a write's
// answer had none, so a client tracking the current checkpoint read the
// workflow again; a workflows walkthrough, 2026-12-06).
type WriteResult struct {
	EventID      string `json:"event_id"`
	Position     string `json:"position"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	State        View   `json:"state"`
	// NextLayer is the layer to run after a resume (the checkpoint's + 1).
	NextLayer *int `json:"next_layer,omitempty"`
}

// Summary is one workflow as GET /v1/workflows lists it: what its state
// row holds, without the channels, queues and DAG (GET /v1/workflows/{id}
// has them).
type Summary struct {
	WorkflowID string `json:"workflow_id"`
	Scope      string `json:"scope"`
	// Status is running, waiting_for_human, waiting_for_agent or
	// completed; CurrentLayer the layer of the last update or checkpoint.
	Status       string `json:"status"`
	CurrentLayer int    `json:"current_layer"`
	// Events counts the events applied; StartedAt and UpdatedAt are the
	// times (RFC 3339) of the first and the last.
	Events    int    `json:"events"`
	StartedAt string `json:"started_at"`
	UpdatedAt string `json:"updated_at"`
	// Checkpoints counts the checkpoints saved; Checkpoint is the state's
	// checkpoint (the last saved, or the one last resumed from) and
	// CheckpointID its id (log position), absent for a checkpoint applied
	// before the processor recorded ids.
	Checkpoints  int            `json:"checkpoints"`
	Checkpoint   *CheckpointRef `json:"checkpoint,omitempty"`
	CheckpointID string         `json:"checkpoint_id,omitempty"`
	// PendingCommands and PendingDecisions count the queued commands and
	// the decisions not answered yet.
	PendingCommands  int     `json:"pending_commands"`
	PendingDecisions int     `json:"pending_decisions"`
	Resumes          int     `json:"resumes,omitempty"`
	Parent           *Parent `json:"parent,omitempty"`
	Outcome          string  `json:"outcome,omitempty"`
	// Position is State.Position: the log position of the last event
	// applied (absent for a state row written before it was kept).
	Position string `json:"position,omitempty"`
}

// ListPage is a page of List as GET /v1/workflows answers it: the
// workflows in key order and the cursor of the next page (the key,
// <scope>/<workflow id>, of the page's last workflow; "" on the last
// page).
type ListPage struct {
	Workflows  []Summary `json:"workflows"`
	NextCursor string    `json:"next_cursor"`
}

// Key is the workflow's events.EntityKey, the order of List and its
// cursor.
func (s Summary) Key() string { return events.EntityKey(s.Scope, s.WorkflowID) }

// summaryRow is the part of a state row a Summary needs (the channels are
// skipped, not kept).
type summaryRow struct {
	WorkflowID       string            `json:"workflow_id"`
	Scope            string            `json:"scope"`
	Status           string            `json:"status"`
	CurrentLayer     int               `json:"current_layer"`
	PendingCommands  []json.RawMessage `json:"pending_commands"`
	PendingDecisions []json.RawMessage `json:"pending_decisions"`
	Checkpoint       *CheckpointRef    `json:"checkpoint"`
	Checkpoints      int               `json:"checkpoints"`
	Resumes          int               `json:"resumes"`
	Parent           *Parent           `json:"parent"`
	Outcome          string            `json:"outcome"`
	Events           int               `json:"events"`
	StartedAt        string            `json:"started_at"`
	UpdatedAt        string            `json:"updated_at"`
	Position         string            `json:"position"`
}

// List returns the workflows of scopes, in events.EntityKey order (scope,
// '/', id: by id within a scope), at most limit (≥ 1) of them, starting
// after the key cursor ("" from the first). next is the key of the last
// one returned when more follow, else "". Only the state rows of the
// given scopes are read (each scope's rows are one key range), so a
// scope's list costs its own workflows, whatever other scopes hold; with
// scopes nil every scope is listed, those allow refuses skipped by their
// key (allow nil: all). A store holds the workflows of the partitions its
// engine applies: on a cluster, the member's.
func List(store *projections.Store, scopes []string, allow func(scope string) bool, limit int, cursor string) (list []Summary, next string, err error) {
	return projections.ListScoped(store, Name, "s/", scopes, allow, limit, cursor, func(key string, val []byte) (Summary, bool, error) {
		var row summaryRow
		if err := json.Unmarshal(val, &row); err != nil {
			return Summary{}, false, fmt.Errorf("workflows: state of %s: %w", key, err)
		}
		s := Summary{WorkflowID: row.WorkflowID, Scope: row.Scope, Status: row.Status, CurrentLayer: row.CurrentLayer,
			Events: row.Events, StartedAt: row.StartedAt, UpdatedAt: row.UpdatedAt, Checkpoints: row.Checkpoints,
			Checkpoint: row.Checkpoint, PendingCommands: len(row.PendingCommands), PendingDecisions: len(row.PendingDecisions),
			Resumes: row.Resumes, Parent: row.Parent, Outcome: row.Outcome, Position: row.Position}
		if s.Checkpoint != nil {
			id, _, err := CheckpointIDAt(store, key, s.Checkpoint.Seq)
			if err != nil {
				return s, false, err
			}
			s.CheckpointID = id
		}
		return s, true, nil
	})
}
