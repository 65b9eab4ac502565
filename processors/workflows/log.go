package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/keylog"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Logged is a workflow event read back from the log with its position.
type Logged struct {
	Pos projections.Position
	Env events.Envelope
}

// partitionOf is the partition of chronicle.workflows that holds the
// records keyed key (franz-go's default partitioner, the producer's).
func partitionOf(ctx context.Context, cl *kgo.Client, key string) (int32, int64, error) {
	part, end, err := keylog.Partition(ctx, cl, string(events.TopicWorkflows), key)
	if err != nil {
		return 0, 0, fmt.Errorf("workflows: %w", err)
	}
	return part, end, nil
}

// ReadLog reads the events of the workflow with key (events.EntityKey)
// back from chronicle.workflows in log order: the records of its partition
// with that key whose own scope attribute is the key's scope (a record
// written straight to Kafka under another scope's key is never returned).
// Records that do not decode are skipped. Cost: one scan of the
// workflow's partition.
func ReadLog(ctx context.Context, brokers []string, key string) ([]Logged, error) {
	scope, _, ok := events.SplitEntityKey(key)
	if !ok {
		return nil, fmt.Errorf("workflows: %q is not scope/id", key)
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: the events of workflow %s are read back from its partition", ErrNoLog, key)
	}
	adm, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	part, end, err := partitionOf(ctx, adm, key)
	if err != nil || end == 0 {
		return nil, err
	}
	logScans.Add(1)
	var out []Logged
	err = keylog.Scan(ctx, brokers, string(events.TopicWorkflows), part, end, key, func(rec *kgo.Record) {
		if env, err := events.FromRecord(rec); err == nil && env.EffectiveScope() == scope {
			out = append(out, Logged{Pos: projections.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}, Env: env})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	return out, nil
}

// ErrNoLog is wrapped by the error of a read that needs the Kafka log when
// no broker is given (nil brokers: chronicle inspect, which serves the
// projections of a data directory and starts no broker). The reads that
// the projection answers (a checkpoint whose id the processor recorded, a
// cpid/ row) never return it; a checkpoint applied before the processor
// kept those rows (an older data directory, until replay --into rebuilds
// it) is named only from the log, and its read returns it.
var ErrNoLog = errors.New("the Kafka log is not read here (no broker)")

// logScans counts the scans of a partition ReadLog made (LogScans).
var logScans atomic.Int64

// LogScans is the number of partition scans ReadLog (and so History) made
// in this process: a test checks that a read answered without one made
// none.
func LogScans() int64 { return logScans.Load() }

// CheckpointIDOf is the id (log position) of the checkpoint the workflow
// with key saved with the event eventID, "" when the log does not show it.
// The processor records it when it applies the checkpoint (CheckpointIDAt):
// then no log is read. For a checkpoint applied before the processor kept
// that row (an older data directory): when the event was written with source (the HTTP routes' source for the
// workflow), its idempotency key holds the offset the processor applied it
// at: the checkpoint is found with one fetch there (CheckpointAt), else by
// one scan of the partition (History). Before, every GET of a workflow
// with a checkpoint scanned its partition from offset 0, so reading a
// small workflow cost every other workflow's records in the partition.
func CheckpointIDOf(ctx context.Context, brokers []string, store *projections.Store, key, source, eventID string) (string, error) {
	scope, _, _ := events.SplitEntityKey(key)
	if seq, ok, err := store.Get(Name, checkpointEventKey(key, eventID)); err != nil {
		return "", err
	} else if ok {
		n, err := strconv.Atoi(string(seq))
		if err != nil {
			return "", fmt.Errorf("workflows: checkpoint of event %q: seq %q: %v", eventID, seq, err)
		}
		if id, ok, err := CheckpointIDAt(store, key, n); err != nil || ok {
			return id, err
		}
	}
	if len(brokers) == 0 {
		return "", fmt.Errorf("%w: the checkpoint of event %q of workflow %s has no id recorded in the projection (a cpid/ row: it was applied by a Chronicle older than them; replay --into rebuilds the directory with them), and only the log names it", ErrNoLog, eventID, key)
	}
	if source != "" {
		probe := events.Envelope{ID: eventID, Source: source, Scope: scope}
		off, applied, _, err := store.AppliedAt(Name, &probe)
		if err != nil {
			return "", err
		}
		if applied {
			cl, err := kafkaconn.NewClient(brokers)
			if err != nil {
				return "", err
			}
			part, _, err := partitionOf(ctx, cl, key)
			cl.Close()
			if err != nil {
				return "", err
			}
			pos := projections.Position{Topic: string(events.TopicWorkflows), Partition: part, Offset: off}
			cp, err := CheckpointAt(ctx, brokers, store, key, pos)
			switch {
			case err == nil && cp.EventID == eventID:
				return pos.String(), nil
			case err != nil && !errors.Is(err, ErrNoCheckpoint):
				return "", err
			}
			// the id was applied as another event: the checkpoint came
			// from another source; the scan finds it
		}
	}
	h, err := History(ctx, brokers, store, key)
	if err != nil {
		return "", err
	}
	for _, e := range h {
		if e.EventID == eventID {
			return e.CheckpointID, nil
		}
	}
	return "", nil
}

// HistoryEntry is one checkpoint of a workflow's history: its id (the log
// position of its event) and the checkpoint the processor saved.
type HistoryEntry struct {
	CheckpointID string `json:"checkpoint_id"`
	Checkpoint
}

// History lists the workflow's checkpoints, oldest first, each named by
// the log position of its workflow.checkpoint.saved.v1 event: the events
// read back from the log (ReadLog) joined with the checkpoints the
// processor saved (a checkpoint event it has not applied yet, or rejected,
// is not listed). Cost: when the processor recorded every checkpoint's id
// (CheckpointIDAt), the workflow's checkpoint rows and nothing from the
// log; else (checkpoints applied by an older Chronicle) one scan of the
// workflow's partition.
func History(ctx context.Context, brokers []string, store *projections.Store, key string) ([]HistoryEntry, error) {
	if h, ok, err := historyOfRows(store, key); err != nil || ok {
		return h, err
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: some checkpoints of workflow %s have no id recorded in the projection (cpid/ rows: they were applied by a Chronicle older than them; replay --into rebuilds the directory with them), and only the log names them", ErrNoLog, key)
	}
	logged, err := ReadLog(ctx, brokers, key)
	if err != nil {
		return nil, err
	}
	var out []HistoryEntry
	seen := map[string]bool{}
	for _, l := range logged {
		if l.Env.Type != events.WorkflowCheckpointSaved || seen[l.Env.ID] {
			continue // a repeat of an event id was dropped as a duplicate
		}
		cp, ok, err := CheckpointByEvent(store, key, l.Env.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			seen[l.Env.ID] = true
			out = append(out, HistoryEntry{CheckpointID: l.Pos.String(), Checkpoint: cp})
		}
	}
	return out, nil
}

// HistoryPage is one page of History read from the projection's rows: the
// checkpoints after the one whose id is after ("" for the first page), at
// most limit of them (0: no limit) and about maxBytes of their rows (a
// page holds at least one), oldest first; next is the id of the page's
// last checkpoint when more follow, "" on the last page. checkpoints is
// the workflow's State.Checkpoints (the caller has read its state). It
// reads the id rows and the page's checkpoint rows only: History decodes every
// checkpoint with its whole state, which a page of the route paid for
// each time (a re-test: limit=1 of a 12-checkpoint workflow took 0.5 s
// and 466 MB). found is false when after names no checkpoint of the
// workflow; ok is false when some checkpoint has no id row (applied by a
// Chronicle older than them): the caller pages History's answer then.
func HistoryPage(store *projections.Store, key string, checkpoints int, after string, limit, maxBytes int) (page []HistoryEntry, next string, found, ok bool, err error) {
	type idRow struct {
		seq int
		id  string
	}
	var ids []idRow
	p := checkpointIDPrefix(key)
	if err := store.Scan(Name, p, "", func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(p, k) {
			return true, nil // a workflow whose id extends this one's
		}
		seq, err := projections.ParseSeqKey(strings.TrimPrefix(k, p))
		if err != nil {
			return false, fmt.Errorf("workflows: checkpoint id row %q: %w", k, err)
		}
		ids = append(ids, idRow{seq, string(v)})
		return true, nil
	}); err != nil {
		return nil, "", false, false, err
	}
	if len(ids) != checkpoints {
		return nil, "", false, false, nil
	}
	start := 0
	if after != "" {
		i := slices.IndexFunc(ids, func(r idRow) bool { return r.id == after })
		if i < 0 {
			return nil, "", false, true, nil
		}
		start = i + 1
	}
	size := 0
	for _, r := range ids[start:] {
		if limit > 0 && len(page) == limit {
			return page, page[len(page)-1].CheckpointID, true, true, nil
		}
		raw, present, err := store.Get(Name, checkpointKey(key, r.seq))
		if err != nil || !present {
			return nil, "", true, present, err
		}
		if len(page) > 0 && size+len(raw) > maxBytes {
			// the row alone does not fit: its blobs need not be read
			return page, page[len(page)-1].CheckpointID, true, true, nil
		}
		cp, n, err := decodeCheckpoint(storeRows(store), key, raw)
		if err != nil {
			return nil, "", true, true, err
		}
		if len(page) > 0 && size+n > maxBytes {
			return page, page[len(page)-1].CheckpointID, true, true, nil
		}
		size += n
		page = append(page, HistoryEntry{CheckpointID: r.id, Checkpoint: cp})
	}
	return page, "", true, true, nil
}

// historyOfRows is History from the projection alone: ok is false when a
// checkpoint has no id row (applied before the processor kept them).
func historyOfRows(store *projections.Store, key string) ([]HistoryEntry, bool, error) {
	cps, err := Checkpoints(store, key)
	if err != nil {
		return nil, false, err
	}
	out := make([]HistoryEntry, 0, len(cps))
	for _, cp := range cps {
		id, ok, err := CheckpointIDAt(store, key, cp.Seq)
		if err != nil || !ok {
			return nil, false, err
		}
		out = append(out, HistoryEntry{CheckpointID: id, Checkpoint: cp})
	}
	if len(out) == 0 {
		return nil, true, nil // History's answer for none
	}
	return out, true, nil
}

// ErrNoCheckpoint is wrapped by the error of a checkpoint id that names no
// checkpoint of the workflow.
var ErrNoCheckpoint = errors.New("no such checkpoint")

// ParseCheckpointID parses a checkpoint id, topic:partition:offset on
// chronicle.workflows.
func ParseCheckpointID(id string) (projections.Position, error) {
	u, err := processors.ParseUntil(id)
	if err != nil || u.Pos == nil {
		return projections.Position{}, fmt.Errorf("%w: checkpoint_id %q is not %s:<partition>:<offset>", ErrNoCheckpoint, id, events.TopicWorkflows)
	}
	if u.Pos.Topic != string(events.TopicWorkflows) {
		return projections.Position{}, fmt.Errorf("%w: checkpoint_id %q is not on %s", ErrNoCheckpoint, id, events.TopicWorkflows)
	}
	return *u.Pos, nil
}

// CheckpointAt returns the checkpoint whose id is the position pos: the
// record there must be a workflow.checkpoint.saved.v1 of the workflow
// with key (same key and scope) that the processor applied. (A repeat of
// a checkpoint event, dropped as a duplicate, resolves to the checkpoint
// its first copy saved; History lists the first position only.) A
// position the processor recorded as a checkpoint's id (its cpid/ row) is
// answered from the projection alone (Cost: a scan of the workflow's
// cpid/ rows, nothing from the log); any other position costs one fetch
// at pos. Without brokers (nil: chronicle inspect), a position that is no
// recorded id is ErrNoCheckpoint when every checkpoint of the workflow has
// its id recorded (only a repeat of a checkpoint event, which the log
// alone resolves, is not answered then), else ErrNoLog.
func CheckpointAt(ctx context.Context, brokers []string, store *projections.Store, key string, pos projections.Position) (Checkpoint, error) {
	scope, _, _ := events.SplitEntityKey(key)
	cp, found, complete, err := checkpointOfID(store, key, pos)
	switch {
	case err != nil:
		return Checkpoint{}, err
	case found:
		return cp, nil
	case len(brokers) == 0 && complete:
		return Checkpoint{}, fmt.Errorf("%w: %s is no checkpoint id of this workflow (the projection records every one of its checkpoints' ids; a later copy of a checkpoint event, which only the log resolves to its first, is not read here)", ErrNoCheckpoint, pos)
	case len(brokers) == 0:
		return Checkpoint{}, fmt.Errorf("%w: %s is no checkpoint id the projection recorded for workflow %s, and some of its checkpoints were applied by a Chronicle older than those records (cpid/ rows; replay --into rebuilds the directory with them): only the log says what is at %s", ErrNoLog, pos, key, pos)
	}
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{pos.Topic: {pos.Partition: kgo.NewOffset().At(pos.Offset)}}),
		// one record is read: the broker still answers the first batch
		// whole, however small the limit (with the defaults, a fetch
		// brought up to 50 MB of the records after it: 36 ms for 5 MB)
		kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1),
		kgo.DisableFetchSessions())
	if err != nil {
		return Checkpoint{}, err
	}
	defer cl.Close()
	adm, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return Checkpoint{}, err
	}
	part, end, err := partitionOf(ctx, adm, key)
	adm.Close()
	if err != nil {
		return Checkpoint{}, err
	}
	if pos.Partition != part || pos.Offset >= end {
		// worded as a record that is no checkpoint: "not a position" said
		// where the partition ended, which another tenant's writes move (a
		// security review, 2026-11-30)
		return Checkpoint{}, fmt.Errorf("%w: %s is not a checkpoint of this workflow", ErrNoCheckpoint, pos)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return Checkpoint{}, fmt.Errorf("workflows: read %s: %w", pos, ctx.Err())
		}
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			if rec.Offset < pos.Offset {
				continue
			}
			env, err := events.FromRecord(rec)
			if rec.Offset != pos.Offset || err != nil || string(rec.Key) != key || env.EffectiveScope() != scope || env.Type != events.WorkflowCheckpointSaved {
				return Checkpoint{}, fmt.Errorf("%w: %s is not a checkpoint of this workflow", ErrNoCheckpoint, pos)
			}
			cp, ok, err := CheckpointByEvent(store, key, env.ID)
			if err != nil {
				return Checkpoint{}, err
			}
			if !ok {
				return Checkpoint{}, fmt.Errorf("%w: %s: its event %q was not applied (not yet, or rejected)", ErrNoCheckpoint, pos, env.ID)
			}
			return cp, nil
		}
	}
}

// checkpointOfID is the checkpoint of the workflow with key whose id the
// processor recorded as pos (its cpid/ row), read from the projection
// alone: found is false when no recorded id is pos; complete says every
// checkpoint of the workflow has its id recorded (false for one applied
// by a Chronicle older than the rows). Cost: a scan of the workflow's
// cpid/ rows and one row read.
func checkpointOfID(store *projections.Store, key string, pos projections.Position) (cp Checkpoint, found, complete bool, err error) {
	want := pos.String()
	p := checkpointIDPrefix(key)
	seq, rows := -1, 0
	err = store.Scan(Name, p, "", func(k string, val []byte) (bool, error) {
		if !projections.OwnRow(p, k) {
			return true, nil // a row of a workflow whose id extends this one's
		}
		rows++
		if string(val) != want {
			return true, nil
		}
		n, err := projections.ParseSeqKey(k[len(p):])
		if err != nil {
			return false, fmt.Errorf("workflows: checkpoint id row %q: %v", k, err)
		}
		seq = n
		return false, nil
	})
	if err != nil {
		return cp, false, false, err
	}
	if seq >= 0 {
		cp, ok, err := getCheckpoint(storeRows(store), key, seq)
		return cp, ok, true, err
	}
	st, ok, err := Get(store, key)
	if err != nil {
		return cp, false, false, err
	}
	return cp, false, ok && rows == st.Checkpoints, nil
}
