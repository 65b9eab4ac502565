package deadletter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the dead-letter projection's name.
const Name = "deadletters"

// Processor projects the records of the dead-letter topic into one row per
// letter, keyed by the rejected event's scope first, so a tenant can list
// the refusals of its own events (GET /v1/deadletters) without anyone
// reading the topic: an event accepted with 202 and refused by a processor
// (a quota breach, a wrong parent) was visible only to an operator with
// the broker's address before.
//
// The key is <scope>/<newest first>/<letter partition>/<letter offset>,
// where <newest first> is math.MaxInt64 minus the letter's timestamp in
// nanoseconds, 19 digits: a scan of a scope lists its newest letters
// first. Each row is written by the batch of its letter's partition, and
// read back only by a redrive note on that partition (which marks it
// redriven), so partitions apply concurrently (StatePerKey), and a
// replay of the topic writes the same rows (the timestamp is the
// record's). A record that names no scope (no JSON event, or a scope
// attribute that is no scope) is skipped: it belongs to no tenant, and
// `chronicle deadletter list` still shows it.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicDeadLetter} }

// StatePerKey implements processors.KeyedState: one row per letter.
func (Processor) StatePerKey() bool { return true }

// Apply writes the row of one letter (an envelope of
// processors.LetterType, built by the engine from the record), or marks a
// letter's row redriven (processors.RedriveType: a redrive note, which is
// on the letter's partition after it; a note of a letter without a row,
// one that names no scope, changes nothing).
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type == processors.RedriveType {
		var d processors.RedriveData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return fmt.Errorf("deadletters: redrive note %s: %w", env.ID, err)
		}
		at, err := time.Parse(time.RFC3339Nano, d.LetterAt)
		if err != nil {
			return fmt.Errorf("deadletters: redrive note %s: letter time %q: %w", env.ID, d.LetterAt, err)
		}
		k := rowKey(d.Scope, at, d.LetterPartition, d.LetterOffset)
		var e Entry
		ok, err := tx.GetJSON(k, &e)
		if err != nil || !ok {
			return err
		}
		e.RedrivenTo, e.RedrivenAt = d.RedrivenTo, d.RedrivenAt
		return tx.SetJSON(k, e)
	}
	if env.Type != processors.LetterType {
		return fmt.Errorf("deadletters: %s is no letter", env.Type)
	}
	var d processors.LetterData
	if err := json.Unmarshal(env.Data, &d); err != nil {
		return fmt.Errorf("deadletters: letter %s: %w", env.ID, err)
	}
	if d.Scope == "" {
		// its rejected record is no JSON event, or its scope is no scope
		// (processors.ErrLetterNoScope): it belongs to no tenant, so no
		// list holds it; serve logs it and `chronicle deadletter list`
		// shows it
		return fmt.Errorf("deadletters: letter %s of %s:%d:%d names no scope: no tenant's list holds it", env.ID, d.Topic, d.Partition, d.Offset)
	}
	e := Entry{ID: fmt.Sprintf("%s:%d:%d", d.Topic, d.Partition, d.Offset), EventID: d.EventID, EventType: d.EventType, EventSource: d.EventSource,
		Scope: d.Scope, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, Handler: d.Handler, Reason: d.Reason, Pointer: d.Pointer, Key: d.Key,
		DeadLetterPartition: d.DeadLetterPartition, DeadLetterOffset: d.DeadLetterOffset, DeadLetteredAt: d.DeadLetteredAt, ValueOmitted: d.ValueOmitted}
	k, err := e.rowKey()
	if err != nil {
		return err
	}
	return tx.SetJSON(k, e)
}

// Entry is one dead letter as GET /v1/deadletters lists it.
type Entry struct {
	// ID names the rejected record, topic:partition:offset, as `chronicle
	// deadletter list` does (`chronicle deadletter redrive --id ID`).
	ID string `json:"id"`
	// EventID, EventType and EventSource are the rejected event's
	// attributes (empty when the record held none), Scope its scope.
	EventID     string `json:"event_id,omitempty"`
	EventType   string `json:"event_type,omitempty"`
	EventSource string `json:"event_source,omitempty"`
	Scope       string `json:"scope"`
	// Topic, Partition and Offset are the rejected record's position.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Handler is the processor or worker that refused it
	// (processor@topic, worker@topic); Reason its error; Pointer the JSON
	// pointer of the member the error names, when it names one
	// (/data/tokens).
	Handler string `json:"handler"`
	Reason  string `json:"reason"`
	Pointer string `json:"pointer,omitempty"`
	// Key is the rejected record's key.
	Key string `json:"key"`
	// DeadLetterPartition and DeadLetterOffset are the letter's own
	// position in chronicle.deadletter; DeadLetteredAt is when the log
	// received it (RFC 3339, UTC).
	DeadLetterPartition int32  `json:"dead_letter_partition"`
	DeadLetterOffset    int64  `json:"dead_letter_offset"`
	DeadLetteredAt      string `json:"dead_lettered_at"`
	// ValueOmitted is the size in bytes of the rejected record's value
	// when the letter was too large to hold it (processors.MaxLetterBytes),
	// absent otherwise: the letter then names the event but holds none of
	// its data, and a redrive reads the record at its position (before,
	// only `chronicle deadletter list` said so: a re-test).
	ValueOmitted int `json:"value_omitted,omitempty"`
	// RedrivenTo is where `chronicle deadletter redrive` re-produced the
	// record ("topic:partition:offset"), RedrivenAt when the log received
	// its redrive note (RFC 3339, UTC); both absent while the letter waits
	// for a redrive. A redriven record that is refused again is a new
	// letter, listed without them.
	RedrivenTo string `json:"redriven_to,omitempty"`
	RedrivenAt string `json:"redriven_at,omitempty"`
}

// Cursor is the entry's row key, also the cursor that lists the entries
// after it: <scope>/<newest first>/<partition>/<offset> (see Processor).
func (e Entry) Cursor() string {
	k, _ := e.rowKey()
	return k
}

func (e Entry) rowKey() (string, error) {
	at, err := time.Parse(time.RFC3339Nano, e.DeadLetteredAt)
	if err != nil {
		return "", fmt.Errorf("deadletters: letter %d:%d: time %q: %w", e.DeadLetterPartition, e.DeadLetterOffset, e.DeadLetteredAt, err)
	}
	return rowKey(e.Scope, at, e.DeadLetterPartition, e.DeadLetterOffset), nil
}

func rowKey(scope string, at time.Time, partition int32, offset int64) string {
	ns := max(at.UnixNano(), 0)
	return fmt.Sprintf("%s/%019d/%06d/%019d", scope, math.MaxInt64-ns, partition, offset)
}

// CheckCursor reports why cursor is not a key of this list (nil when it is
// one): a scope, then 19 digits, 6 digits and 19 digits, '/' between them.
func CheckCursor(cursor string) error {
	sc, rest, ok := strings.Cut(cursor, "/")
	if !ok {
		return fmt.Errorf("no '/' after a scope")
	}
	if !events.ValidScope(sc) {
		return fmt.Errorf("%q is not a scope (project:<id>, team:<id>, org:<id>)", sc)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || len(parts[0]) != 19 || len(parts[1]) != 6 || len(parts[2]) != 19 {
		return fmt.Errorf("%q is not <19 digits>/<6 digits>/<19 digits>", rest)
	}
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return fmt.Errorf("%q is not <19 digits>/<6 digits>/<19 digits>", rest)
		}
	}
	return nil
}

// ListPage is a page of GET /v1/deadletters: the entries and the cursor of
// the next page ("" on the last).
type ListPage struct {
	DeadLetters []Entry `json:"dead_letters"`
	NextCursor  string  `json:"next_cursor"`
}

// ListScoped lists up to limit entries after cursor ("" from the start), in key
// order: by scope, newest first within a scope. scopes nil lists every
// scope (allow filters them), else only those scopes' rows are read;
// ofType, when set, keeps only letters of that event type. next is the last
// entry's Cursor when more follow.
func ListScoped(store *projections.Store, scopes []string, allow func(scope string) bool, limit int, cursor string, ofType string) (list []Entry, next string, err error) {
	return ListScopedMatching(store, scopes, allow, limit, cursor, func(e Entry) bool { return ofType == "" || e.EventType == ofType })
}

// ListScopedMatching is ListScoped keeping only the letters match admits
// (GET /v1/deadletters' ?type= and ?key=).
func ListScopedMatching(store *projections.Store, scopes []string, allow func(scope string) bool, limit int, cursor string, match func(Entry) bool) (list []Entry, next string, err error) {
	return projections.ListScoped(store, Name, "", scopes, allow, limit, cursor, func(key string, val []byte) (Entry, bool, error) {
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil {
			return e, false, fmt.Errorf("deadletters: row %s: %w", key, err)
		}
		return e, match(e), nil
	})
}

// OfKey answers the letters this store holds of the records keyed key
// (events.EntityKey: <scope>/<id>) on topic, by the rejected record's
// position (Entry.ID, "topic:partition:offset"), newest letter first
// within a record (a record may have several: a processor's and a
// worker's). GET /v1/sessions/{id}/events marks with them the events that
// were refused. Cost: one scan of key's scope's rows (the projection is
// keyed by scope and time, not by the record), each row decoded; no row
// is added for it, so the projections and their digest are unchanged and
// a directory written before this reads the same. An as-of store holds
// only the letters applied up to its positions, so only those are
// answered.
func OfKey(store *projections.Store, key, topic string) (map[string][]Entry, error) {
	scope, _, ok := events.SplitEntityKey(key)
	if !ok || !events.ValidScope(scope) {
		return nil, fmt.Errorf("deadletters: key %q is not <scope>/<id>", key)
	}
	out := map[string][]Entry{}
	err := store.Scan(Name, scope+"/", "", func(k string, val []byte) (bool, error) {
		// a cheap test before decoding the row: its key is in the JSON
		if !bytes.Contains(val, []byte(topic)) {
			return true, nil
		}
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil {
			return false, fmt.Errorf("deadletters: row %s: %w", k, err)
		}
		if e.Key == key && e.Topic == topic {
			out[e.ID] = append(out[e.ID], e)
		}
		return true, nil
	})
	return out, err
}
