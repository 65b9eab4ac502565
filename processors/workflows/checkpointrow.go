package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A checkpoint row (cp/<key>/<seq>) holds the checkpoint's ref and its
// state, except that each of the state's large fields (blobFields, at
// least blobMinBytes of JSON) is stored once per distinct value in a blob
// row, cb/<key>/<SHA-256 of the value, hex>, and the checkpoint row names
// it by that hash (its "blobs" member: field → hash). So a checkpoint
// costs what changed since the workflow's previous checkpoints, not its
// whole state again: the way LangGraph's checkpointers keep one blob per
// channel version and a checkpoint maps channels to versions.
//
// Before (2026-12-05), every checkpoint row held the complete state: a
// security walkthrough grew one workflow's state to 17 MB with 20 updates
// of 870 KB, then sent 40 checkpoints of {"layer":1}, and the projections
// grew from 71 MB to 1,064 MB, about 19 MB per 60-byte request. A row
// written before (no "blobs") still reads as it was written.
type checkpointRow struct {
	CheckpointRef
	State json.RawMessage   `json:"state"`
	Blobs map[string]string `json:"blobs,omitempty"`
}

// blobFields are the State members that grow with a workflow's events
// (the append and merge channels, the queues, the DAG, the output), by
// their JSON names.
var blobFields = []string{
	events.ChannelMessages, events.ChannelTasks, events.ChannelDecisions, events.ChannelContext,
	"pending_commands", "pending_decisions", "dag", "output",
}

// blobMinBytes is the size from which a field goes to a blob row: below
// it, the 64-byte hash and the row would cost about as much as the value.
const blobMinBytes = 128

func blobKey(key, hash string) string { return "cb/" + key + "/" + hash }

// putCheckpoint writes cp's row and the blob rows of its large fields that
// the workflow does not hold yet. The bytes depend on the state alone
// (map keys sorted), so a replay writes the same rows.
func putCheckpoint(tx *projections.Tx, key string, cp Checkpoint) error {
	raw, err := events.Marshal(cp.State)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	row := checkpointRow{CheckpointRef: cp.CheckpointRef}
	for _, f := range blobFields {
		v, ok := fields[f]
		if !ok || len(v) < blobMinBytes {
			continue
		}
		sum := sha256.Sum256(v)
		h := hex.EncodeToString(sum[:])
		if has, err := tx.Has(blobKey(key, h)); err != nil {
			return err
		} else if !has {
			if err := tx.Put(blobKey(key, h), v); err != nil {
				return err
			}
		}
		if row.Blobs == nil {
			row.Blobs = map[string]string{}
		}
		row.Blobs[f] = h
		delete(fields, f)
	}
	if row.State, err = events.Marshal(fields); err != nil {
		return err
	}
	return tx.SetJSON(checkpointKey(key, cp.Seq), row)
}

// getRow reads one row of the workflows projection: Tx.Get while an event
// is applied, Store.Get for the read API.
type getRow func(k string) ([]byte, bool, error)

func storeRows(store *projections.Store) getRow {
	return func(k string) ([]byte, bool, error) { return store.Get(Name, k) }
}

// decodeCheckpoint reads a checkpoint row with its blobs; size is the
// bytes read (the row and its blobs), what a page of the history counts.
func decodeCheckpoint(get getRow, key string, raw []byte) (cp Checkpoint, size int, err error) {
	var row checkpointRow
	if err := json.Unmarshal(raw, &row); err != nil {
		return cp, 0, err
	}
	cp.CheckpointRef, size = row.CheckpointRef, len(raw)
	if err := json.Unmarshal(row.State, &cp.State); err != nil {
		return cp, 0, err
	}
	for _, f := range blobFields { // a fixed order: the same state whatever the map's
		h, ok := row.Blobs[f]
		if !ok {
			continue
		}
		v, present, err := get(blobKey(key, h))
		if err != nil {
			return cp, 0, err
		}
		if !present {
			return cp, 0, fmt.Errorf("workflows: checkpoint %d of %s: the blob row of %s (%s) is missing", row.Seq, key, f, h)
		}
		size += len(v)
		// one member at a time: Unmarshal sets only the members present
		one := make([]byte, 0, len(f)+len(v)+5)
		one = append(append(append(append(one, `{"`...), f...), `":`...), v...)
		if err := json.Unmarshal(append(one, '}'), &cp.State); err != nil {
			return cp, 0, fmt.Errorf("workflows: checkpoint %d of %s: %s: %w", row.Seq, key, f, err)
		}
	}
	return cp, size, nil
}

// getCheckpoint reads the workflow's checkpoint seq; ok is false when it
// has no such row.
func getCheckpoint(get getRow, key string, seq int) (Checkpoint, bool, error) {
	raw, ok, err := get(checkpointKey(key, seq))
	if err != nil || !ok {
		return Checkpoint{}, ok, err
	}
	cp, _, err := decodeCheckpoint(get, key, raw)
	return cp, err == nil, err
}
