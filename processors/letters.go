package processors

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LetterType is the type of the envelope the engine (and replay, standby
// replicas, global tables: parseItem) hands a processor of
// events.TopicDeadLetter for each record of that topic. Those records are
// no events of the topic: they are copies of rejected records of other
// topics with the dead-letter headers, so the engine reads the headers
// into a LetterData (the envelope's data) instead of validating them as
// events. The envelope's id names the letter's own position
// ("<partition>:<offset>" of chronicle.deadletter), so every letter is
// applied once even when several letters name the same event (several
// handlers refused it, or a redrive was refused again). The type is no
// event type of the registry: nothing produces it, and nothing but a
// processor of the dead-letter topic sees it.
const LetterType events.Type = "chronicle.deadletter.letter"

// LetterSource is the source attribute of those envelopes.
const LetterSource = "chronicle/deadletter"

// LetterData is what a record of the dead-letter topic says: the rejected
// record's position, the handler that refused it and why, the event's
// id, type, source and scope when the record holds them, and the letter's
// own position and timestamp. It is a function of the record, so a replay
// reads the same.
type LetterData struct {
	// Topic, Partition and Offset are the rejected record's position.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Handler is processor@topic or worker@topic; Reason its error;
	// Pointer the member of the event the error names, when it names one.
	Handler string `json:"handler"`
	Reason  string `json:"reason"`
	Pointer string `json:"pointer,omitempty"`
	// Key is the original record key.
	Key string `json:"key"`
	// EventID, EventType and EventSource are the event's attributes when
	// the record holds a JSON event with them.
	EventID     string `json:"event_id,omitempty"`
	EventType   string `json:"event_type,omitempty"`
	EventSource string `json:"event_source,omitempty"`
	// Scope is the event's scope attribute (events.DefaultScope when it
	// has none).
	Scope string `json:"scope"`
	// DeadLetterPartition and DeadLetterOffset are the letter's position in
	// the dead-letter topic; DeadLetteredAt its record's timestamp
	// (RFC 3339, UTC): when the log received the letter.
	DeadLetterPartition int32  `json:"dead_letter_partition"`
	DeadLetterOffset    int64  `json:"dead_letter_offset"`
	DeadLetteredAt      string `json:"dead_lettered_at"`
	// ValueOmitted is the size in bytes of the rejected record's value
	// when the letter left it out (MaxLetterBytes, HeaderValueOmitted),
	// else 0: a redrive then reads the record at its position.
	ValueOmitted int `json:"value_omitted,omitempty"`
}

// ErrLetterNoScope is the error of LetterOf for a letter that belongs to
// no tenant: its rejected record is no JSON event, or its scope attribute
// is no scope. LetterOf then still returns what the headers say, with an
// empty Scope.
var ErrLetterNoScope = errors.New("the letter names no scope")

// LetterOf reads a record of the dead-letter topic. It fails, naming the
// header, when one of the original-position headers is missing or
// malformed; and, wrapping ErrLetterNoScope with the LetterData read but
// its scope, when the record's event has a scope attribute that is no
// scope or the record is no JSON event at all: such a letter belongs to no
// tenant (`chronicle deadletter list` still shows it, and serve logs it).
func LetterOf(rec *kgo.Record) (LetterData, error) {
	hs := map[string]string{}
	for _, h := range rec.Headers {
		hs[h.Key] = string(h.Value)
	}
	d := LetterData{Topic: hs[HeaderOriginalTopic], Handler: hs[HeaderHandler], Reason: hs[HeaderError], Pointer: hs[HeaderPointer], Key: string(rec.Key),
		DeadLetterPartition: rec.Partition, DeadLetterOffset: rec.Offset, DeadLetteredAt: events.RecordTime(rec.Timestamp)}
	at := fmt.Sprintf("dead letter %d:%d", rec.Partition, rec.Offset)
	if d.Topic == "" {
		return LetterData{}, fmt.Errorf("%s: header %s: missing", at, HeaderOriginalTopic)
	}
	p, err := strconv.ParseInt(hs[HeaderOriginalPartition], 10, 32)
	if err != nil {
		return LetterData{}, fmt.Errorf("%s: header %s: %q is not a partition", at, HeaderOriginalPartition, hs[HeaderOriginalPartition])
	}
	o, err := strconv.ParseInt(hs[HeaderOriginalOffset], 10, 64)
	if err != nil {
		return LetterData{}, fmt.Errorf("%s: header %s: %q is not an offset", at, HeaderOriginalOffset, hs[HeaderOriginalOffset])
	}
	d.Partition, d.Offset = int32(p), o
	if k, ok := hs[kafkapubsub.RecordKeyMetadataKey]; ok { // a worker's letter
		d.Key = k
	}
	if n, err := strconv.Atoi(hs[HeaderValueOmitted]); err == nil && n > 0 {
		d.ValueOmitted = n
	}
	// a worker's letter holds the structured event next to its ce_
	// headers, an engine letter the record as it was: either way the
	// attributes read the same
	raw, err := events.StructuredJSON(rec)
	var ev letterEvent
	parsed := err == nil && json.Unmarshal(raw, &ev) == nil
	if !parsed || ev.ID == "" || ev.Type == "" {
		// a binary-mode record refused before its envelope was built (a
		// content-type other than JSON, data that is no JSON) still names
		// its event in its ce_ headers (before, its letter named none: a
		// Python integrator's walkthrough, 2026-12-01), and so does one
		// whose content-type said structured mode while its attributes
		// were ce_ headers, and its value the data (before, its letter
		// named no event: the structured parse of the data found no id)
		if b := binaryAttributes(rec); b["id"] != "" && b["type"] != "" {
			ev = letterEvent{ID: b["id"], Type: b["type"], Source: b["source"]}
			if sc, ok := b["scope"]; ok {
				ev.Scope, _ = json.Marshal(sc)
			}
		} else if first, ok := batchEvent(rec.Value); ok {
			ev = first
		} else if !parsed {
			return d, fmt.Errorf("%s: the rejected record is no JSON event, so it names no scope: %w", at, ErrLetterNoScope)
		}
	}
	d.EventID, d.EventType, d.EventSource, d.Scope = ev.ID, ev.Type, ev.Source, events.DefaultScope
	if len(ev.Scope) > 0 && string(ev.Scope) != "null" {
		var sc string
		if json.Unmarshal(ev.Scope, &sc) != nil || !events.ValidScope(sc) {
			d.Scope = ""
			return d, fmt.Errorf("%s: the rejected event's scope %s is no scope: %w", at, ev.Scope, ErrLetterNoScope)
		}
		d.Scope = sc
	}
	return d, nil
}

// letterEvent is what a letter names of its rejected record's event.
type letterEvent struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Source string          `json:"source"`
	Scope  json.RawMessage `json:"scope"`
}

// batchEvent is the first event of value read as a JSON Batch Format
// array (application/cloudevents-batch+json, which a Kafka record may not
// carry: events.ContentTypeBatch), with the scope every event of the
// array has (absent is events.DefaultScope's); ok is false when value is
// no such array, the first event names no id or type, or the events'
// scopes differ (the letter then belongs to no tenant: showing it to one
// would show it the others' events). Before, such a letter named no event
// and no tenant saw it.
func batchEvent(value []byte) (first letterEvent, ok bool) {
	var evs []letterEvent
	if json.Unmarshal(value, &evs) != nil || len(evs) == 0 || evs[0].ID == "" || evs[0].Type == "" {
		return letterEvent{}, false
	}
	scope := func(e letterEvent) string {
		if len(e.Scope) == 0 || string(e.Scope) == "null" {
			return `"` + events.DefaultScope + `"`
		}
		return string(e.Scope)
	}
	for _, e := range evs[1:] {
		if scope(e) != scope(evs[0]) {
			return letterEvent{}, false
		}
	}
	return evs[0], true
}

// binaryAttributes are the CloudEvents attributes of a binary-mode
// record's ce_ headers (the Kafka binding), by name, lower case; without
// any, those of its ce- headers (the HTTP binding's names, which a record
// may not use: events.FromRecord refuses it saying so, and its letter
// still names the event the producer meant; before, it named none, a
// kafkajs walkthrough); empty for a record with neither.
func binaryAttributes(rec *kgo.Record) map[string]string {
	kafka, http := map[string]string{}, map[string]string{}
	for _, h := range rec.Headers {
		switch k := strings.ToLower(h.Key); {
		case strings.HasPrefix(k, "ce_"):
			kafka[strings.TrimPrefix(k, "ce_")] = string(h.Value)
		case strings.HasPrefix(k, "ce-"):
			http[strings.TrimPrefix(k, "ce-")] = string(h.Value)
		}
	}
	if len(kafka) == 0 {
		return http
	}
	return kafka
}

// RedriveType is the type of the envelope the engine hands a processor of
// events.TopicDeadLetter for a redrive note: a record `chronicle
// deadletter redrive` writes to the dead-letter topic, on the partition of
// the letter it redrove, after the letter's record was re-produced. Its
// data is a RedriveData. A note is no letter: the engine does not report
// it as one (RunnerConfig.OnDeadLetter) and `deadletter list` marks the
// letter with it instead of listing it.
const RedriveType events.Type = "chronicle.deadletter.redriven"

// The headers of a redrive note (its value repeats them as JSON for a
// reader of the topic such as kcat).
const (
	// HeaderRedriveOf is the redriven letter's own position in the
	// dead-letter topic, "<partition>:<offset>" (the note is on that
	// partition, after the letter).
	HeaderRedriveOf = "redrive_of"
	// HeaderRedriveOfTime is the letter's record timestamp (RFC 3339,
	// UTC, events.RecordTime): with the scope, it names the letter's row
	// of the deadletters projection.
	HeaderRedriveOfTime = "redrive_of_time"
	// HeaderRedriveScope is the scope of the letter's rejected event
	// (LetterData.Scope; empty when it names none).
	HeaderRedriveScope = "redrive_scope"
	// HeaderRedrivenTo is where the record was re-produced,
	// "topic:partition:offset".
	HeaderRedrivenTo = "redriven_to"
)

// RedriveData is what a redrive note says: which letter was redriven
// (its position, timestamp and scope), where its record went, and when
// (the note's record timestamp, RFC 3339, UTC).
type RedriveData struct {
	LetterPartition int32  `json:"letter_partition"`
	LetterOffset    int64  `json:"letter_offset"`
	LetterAt        string `json:"letter_at"`
	Scope           string `json:"scope"`
	RedrivenTo      string `json:"redriven_to"`
	RedrivenAt      string `json:"redriven_at,omitempty"`
}

// IsRedriveNote reports whether rec, a record of the dead-letter topic, is
// a redrive note rather than a letter.
func IsRedriveNote(rec *kgo.Record) bool {
	for _, h := range rec.Headers {
		if h.Key == HeaderRedriveOf {
			return true
		}
	}
	return false
}

// RedriveOf reads a redrive note. It fails, naming the header, when one is
// missing or malformed.
func RedriveOf(rec *kgo.Record) (RedriveData, error) {
	hs := map[string]string{}
	for _, h := range rec.Headers {
		hs[h.Key] = string(h.Value)
	}
	at := fmt.Sprintf("redrive note %d:%d", rec.Partition, rec.Offset)
	d := RedriveData{LetterAt: hs[HeaderRedriveOfTime], Scope: hs[HeaderRedriveScope], RedrivenTo: hs[HeaderRedrivenTo], RedrivenAt: events.RecordTime(rec.Timestamp)}
	p, o, ok := strings.Cut(hs[HeaderRedriveOf], ":")
	lp, err1 := strconv.ParseInt(p, 10, 32)
	lo, err2 := strconv.ParseInt(o, 10, 64)
	if !ok || err1 != nil || err2 != nil || lp < 0 || lo < 0 {
		return RedriveData{}, fmt.Errorf("%s: header %s: %q is not partition:offset", at, HeaderRedriveOf, hs[HeaderRedriveOf])
	}
	d.LetterPartition, d.LetterOffset = int32(lp), lo
	if _, err := time.Parse(time.RFC3339Nano, d.LetterAt); err != nil {
		return RedriveData{}, fmt.Errorf("%s: header %s: %q is not an RFC 3339 time", at, HeaderRedriveOfTime, d.LetterAt)
	}
	if d.Scope != "" && !events.ValidScope(d.Scope) { // empty: the letter names no scope
		return RedriveData{}, fmt.Errorf("%s: header %s: %q is no scope", at, HeaderRedriveScope, d.Scope)
	}
	if d.RedrivenTo == "" {
		return RedriveData{}, fmt.Errorf("%s: header %s: missing", at, HeaderRedrivenTo)
	}
	return d, nil
}

// letterItem is parseItem for a record of the dead-letter topic: an
// envelope of LetterType whose data is the LetterData, or of RedriveType
// whose data is the RedriveData for a redrive note. A record it cannot
// read is an item with Err, which is never dead-lettered (its own topic
// is the dead-letter topic: see deadLetters).
func letterItem(r *kgo.Record) projections.Item {
	if IsRedriveNote(r) {
		d, err := RedriveOf(r)
		if err == nil && d.Scope == "" {
			err = fmt.Errorf("redrive note %d:%d: its letter names no scope, so it has no row to mark", r.Partition, r.Offset)
		}
		return topicItem(r, RedriveType, d.RedrivenAt, d.Scope, d, err)
	}
	d, err := LetterOf(r)
	if errors.Is(err, ErrLetterNoScope) {
		// an envelope all the same, of no scope: the projection refuses
		// it (no row belongs to no tenant) and serve is told of it
		// (RunnerConfig.OnDeadLetter), which it was not when the item
		// held only the error
		err = nil
	}
	return topicItem(r, LetterType, d.DeadLetteredAt, d.Scope, d, err)
}

// topicItem is the item of record r of the dead-letter topic: an envelope
// of type typ, with time at and the scope, whose id is r's position and
// whose data is data as JSON; or, when err (the reading of r) is not nil,
// an item with Err.
func topicItem(r *kgo.Record, typ events.Type, at, scope string, data any, err error) projections.Item {
	it := projections.Item{Pos: projections.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}}
	var raw []byte
	if err == nil {
		raw, err = events.Marshal(data)
	}
	if err != nil {
		it.Err = fmt.Errorf("at %s: %w", it.Pos, err)
		return it
	}
	it.Env = &events.Envelope{SpecVersion: "1.0", ID: fmt.Sprintf("%d:%d", r.Partition, r.Offset), Source: LetterSource, Type: typ,
		Time: at, Scope: scope, Data: raw}
	it.Sum, it.IDSum = projections.ContentHash(it.Env), projections.IDHash(it.Env)
	return it
}

// deadLetters reports whether records of topic may be dead-lettered: all
// but those of the dead-letter topic itself, whose rejection would write a
// letter of a letter.
func deadLetters(topic string) bool { return topic != string(events.TopicDeadLetter) }
