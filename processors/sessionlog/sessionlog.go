// Package sessionlog is the processor that indexes, for every session,
// where its records sit in the log, so GET /v1/sessions/{id}/events reads
// a session's records at their offsets instead of scanning
// chronicle.sessions from offset 0 (issue 11, item 7).
//
// For each record it consumes it writes one row naming the record's
// position (topic, partition, offset) under the session the record
// belongs to, in the batch that advances the processor's offset, so the
// index is exactly as far as the processor and a replay rebuilds it bit
// for bit (positions are the log's, projections.Tx.Position):
//
//	x/<session key>\x00<kind>/<topic>/<partition, 6 digits>/<offset, 20 digits>  → the event type
//
// <session key> is the session's events.EntityKey (scope "/" id) and
// <kind> one of the Kind constants:
//
//   - KindEvent: every record of chronicle.sessions, under its record key
//     (the session; a workflow task without a sessionid is under its
//     workflow's key, as its record key says);
//   - KindEvaluation: evaluation.completed.v1 on chronicle.evaluations
//     (keyed by the session);
//   - KindMemory: on chronicle.memories, a memory.recorded.v1 whose
//     source_session names the session (the memories distilled from it, or
//     recorded for it) and distillation.completed.v1 (the LLM distiller's
//     answer for the session, keyed by it);
//   - KindPairContext: pair.context.retrieved.v1 on chronicle.learned
//     (keyed by the session).
//
// The KindMemory rows are written by Memories, a global table of
// chronicle.memories (its one partition is owned by one member of a
// cluster, while a session's other records sit on the partitions of its
// own key): every instance indexes every session's memory records, so the
// session's owner answers them whichever member holds the memory bank.
// A memory.recorded.v1 row is a row of another key (the record is keyed by
// the memory): it is written once, by the record at that position, and
// never read in Apply, so the rows do not depend on the order in which
// records are applied. Processor reads three topics, so the engine applies
// its partitions one batch at a time (processors.KeyedState).
package sessionlog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "sessionlog"

// MemoriesName is the Memories table's and projection's name.
const MemoriesName = "sessionlog.memories"

// Kinds of indexed records.
const (
	KindEvent       = "event"
	KindEvaluation  = "evaluation"
	KindMemory      = "memory"
	KindPairContext = "pair_context"
)

// Processor is the session-index processor.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic {
	return []events.Topic{events.TopicSessions, events.TopicEvaluations, events.TopicLearned}
}

// Memories indexes the memory records of every session (KindMemory) from
// chronicle.memories; it runs as a global table (processors.GlobalTable).
type Memories struct{}

// Name implements processors.Processor.
func (Memories) Name() string { return MemoriesName }

// Topics implements processors.Processor: chronicle.memories.
func (Memories) Topics() []events.Topic { return []events.Topic{events.TopicMemories} }

// Types implements processors.TypedProcessor.
func (Memories) Types() []events.Type {
	return []events.Type{events.MemoryRecorded, events.DistillationCompleted}
}

// GlobalTable implements processors.GlobalTable: every instance indexes
// every session's memory records.
func (Memories) GlobalTable() bool { return true }

// Apply implements processors.Processor: one row for a
// distillation.completed.v1 (under its session) or a memory.recorded.v1
// with a source_session, nothing for the others; it never rejects.
func (Memories) Apply(tx *projections.Tx, env *events.Envelope) error {
	var key string
	switch env.Type {
	case events.DistillationCompleted:
		k, err := events.Key(env)
		if err != nil {
			return nil
		}
		key = k
	case events.MemoryRecorded:
		var d struct {
			SourceSession string `json:"source_session"`
		}
		if env.Decode(&d) != nil || d.SourceSession == "" || events.CheckID(d.SourceSession) != nil {
			return nil
		}
		key = events.EntityKey(env.EffectiveScope(), d.SourceSession)
	default:
		return nil
	}
	return tx.Set(rowKey(key, KindMemory, tx.Position()), []byte(env.Type))
}

// rowKey is the index row of the record at pos of kind under session key.
func rowKey(key, kind string, pos projections.Position) string {
	return fmt.Sprintf("x/%s\x00%s/%s/%06d/%020d", key, kind, pos.Topic, pos.Partition, pos.Offset)
}

// Apply implements processors.Processor: one row for a record that
// belongs to a session, nothing for the others. It never rejects an event
// of its topics (a record the other processors refuse is still in the
// session's log).
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	pos := tx.Position()
	var key, kind string
	switch events.Topic(pos.Topic) {
	case events.TopicSessions:
		k, err := events.Key(env)
		if err != nil {
			return nil // not keyed by an entity: no session to index under
		}
		key, kind = k, KindEvent
	case events.TopicEvaluations:
		if env.Type != events.EvaluationCompleted {
			return nil
		}
		k, err := events.Key(env)
		if err != nil {
			return nil
		}
		key, kind = k, KindEvaluation
	case events.TopicLearned:
		if env.Type != events.PairContextRetrieved {
			return nil
		}
		k, err := events.Key(env)
		if err != nil {
			return nil
		}
		key, kind = k, KindPairContext
	default:
		return nil
	}
	return tx.Set(rowKey(key, kind, pos), []byte(env.Type))
}

// Entry is one indexed record of a session.
type Entry struct {
	Kind     string
	Type     events.Type
	Position projections.Position
}

// Entries returns the indexed records of the session with key
// (events.EntityKey), by kind, each kind in topic, partition, offset
// order (log order within a partition): Processor's rows and Memories'.
func Entries(store *projections.Store, key string) (map[string][]Entry, error) {
	out := map[string][]Entry{}
	for _, proj := range []string{Name, MemoriesName} {
		if err := entries(store, proj, key, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func entries(store *projections.Store, proj, key string, out map[string][]Entry) error {
	prefix := "x/" + key + "\x00"
	return store.Scan(proj, prefix, "", func(k string, v []byte) (bool, error) {
		rest := strings.TrimPrefix(k, prefix)
		parts := strings.Split(rest, "/")
		if len(parts) < 4 {
			return false, fmt.Errorf("sessionlog: malformed row %q", k)
		}
		n := len(parts)
		part, perr := strconv.ParseInt(parts[n-2], 10, 32)
		off, oerr := strconv.ParseInt(parts[n-1], 10, 64)
		if perr != nil || oerr != nil {
			return false, fmt.Errorf("sessionlog: malformed row %q", k)
		}
		e := Entry{Kind: parts[0], Type: events.Type(v), Position: projections.Position{Topic: strings.Join(parts[1:n-2], "/"), Partition: int32(part), Offset: off}}
		out[e.Kind] = append(out[e.Kind], e)
		return true, nil
	})
}

// MarshalJSON renders an Entry as {kind, type, position "topic:partition:offset"}.
func (e Entry) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"kind": e.Kind, "type": string(e.Type), "position": e.Position.String()})
}
