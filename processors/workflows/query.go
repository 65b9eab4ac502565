package workflows

import (
	"context"
	"encoding/json"
	"strconv"

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
	var out []Checkpoint
	p := checkpointPrefix(key)
	err := store.Scan(Name, p, "", func(k string, val []byte) (bool, error) {
		if !projections.OwnRow(p, k) {
			return true, nil // a checkpoint of a workflow whose id extends this one's
		}
		var cp Checkpoint
		if err := json.Unmarshal(val, &cp); err != nil {
			return false, err
		}
		out = append(out, cp)
		return true, nil
	})
	return out, err
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
	ok, err = store.GetJSON(Name, checkpointKey(key, n), &cp)
	return cp, ok, err
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
	var cp Checkpoint
	seq := st.Checkpoints - 1
	if ok, err := store.GetJSON(Name, checkpointKey(key, seq), &cp); err != nil || !ok {
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
// from) and the state after the event.
type WriteResult struct {
	EventID      string `json:"event_id"`
	Position     string `json:"position"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	State        State  `json:"state"`
	// NextLayer is the layer to run after a resume (the checkpoint's + 1).
	NextLayer *int `json:"next_layer,omitempty"`
}
