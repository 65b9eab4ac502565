package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka protocol binding of CloudEvents
// (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/kafka-protocol-binding.md):
// Chronicle produces structured mode and accepts both structured and binary
// mode.

const (
	headerContentType = "content-type"
	binaryPrefix      = "ce_"
)

// Record encodes e as a Kafka record in structured content mode on the
// topic of its type, keyed by Key(e).
func Record(e *Envelope) (*kgo.Record, error) {
	val, err := e.MarshalJSON() // compact already: json.Marshal(e) would compact it again
	if err != nil {
		return nil, fmt.Errorf("events: encode %s: %w", e.ID, err)
	}
	return recordOf(e, val)
}

// RecordTopic is the topic and key Record would give e, and the error it
// would return for a type it does not know or an event without its key,
// without encoding e: for a caller that needs to know the record can be
// made but not its bytes (a replay's Emit, whose outbox is dropped).
func RecordTopic(e *Envelope) (topic Topic, key string, err error) {
	ti, ok := Lookup(e.Type)
	if !ok {
		return "", "", &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("unknown event type %q", e.Type)}
	}
	key, err = Key(e)
	if err != nil {
		return "", "", err
	}
	return ti.Topic, key, nil
}

// recordOf is the record of e whose structured-mode encoding is val.
func recordOf(e *Envelope, val []byte) (*kgo.Record, error) {
	topic, key, err := RecordTopic(e)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{
		Topic:   string(topic),
		Key:     []byte(key),
		Value:   val,
		Headers: []kgo.RecordHeader{{Key: headerContentType, Value: []byte(ContentTypeCloudEvents)}},
	}, nil
}

// FromRecord decodes and validates the event in r, in structured mode
// (content-type application/cloudevents+json, or no ce_ headers) or binary
// mode (ce_* headers carry the attributes, the value is the data).
//
// An event without the time attribute gets RecordTime(r.Timestamp): the
// record's timestamp stands in, and since it is in the log every replay
// sees the same time.
//
// The event's Data may share r.Value's bytes, as a record's key and value
// share its fetch's (franz-go does not reuse them unless its pools are
// configured): copy Data before changing r.Value in place.
//
// It does not look at the record's key or partition: the processors check
// that a record sits on its event's partition (Partition, PartitionError).
func FromRecord(r *kgo.Record) (Envelope, error) {
	env, _, err := FromRecordKey(r)
	return env, err
}

// FromRecordKey is FromRecord that also returns the event's Key, computed
// on the parse's way (no second look at the data).
func FromRecordKey(r *kgo.Record) (Envelope, string, error) {
	raw, err := structuredJSON(r)
	if err != nil {
		return Envelope{}, "", err
	}
	env, key, err := parseEventKey(raw, true, true)
	if err != nil {
		return env, "", structuredHint(r, err)
	}
	if env.Time == "" {
		env.Time, env.TimeFromLog = RecordTime(r.Timestamp), true
	}
	return env, key, nil
}

// Partition is the partition of a topic of n partitions that the record
// key key goes to with Kafka's default partitioner (murmur2, as the Java
// client, franz-go's default and Chronicle's producers partition), where
// all of an entity's events belong (Key). n ≤ 1: 0.
func Partition(topic, key string, n int) int32 {
	if n <= 1 {
		return 0
	}
	return int32(keyPartitioner.Partition(&kgo.Record{Key: []byte(key)}, n))
}

// keyPartitioner is franz-go's default partitioner for keyed records, made
// once: ForTopic seeds a random source (for records without a key), which
// cost more than the rest of a record's parse when made per record; with a
// key, Partition only hashes it (no state), so one serves every topic and
// goroutine.
var keyPartitioner = kgo.StickyKeyPartitioner(nil).ForTopic("")

// PartitionError is the refusal of a record that sits on another
// partition than its event's Key belongs on (Partition): its entity's
// other events are elsewhere, so no order with them holds, and two
// partitions' workers would update one entity at once. Key is the
// event's key, RecordKey the record's ("" for none).
type PartitionError struct {
	Topic           string
	Partition, Want int32
	Key, RecordKey  string
}

func (e *PartitionError) Error() string {
	// a record without a key was said to have key "", which read as an
	// empty key sent on purpose (a kafkajs walkthrough)
	rk := fmt.Sprintf("record key %q", e.RecordKey)
	if e.RecordKey == "" {
		rk = "the record has no key, or an empty one, so the producer's partitioner chose its partition"
	}
	return fmt.Sprintf("record on partition %d of %s, but its event's key %q belongs on partition %d (%s): key each record with events.Key (the scope, then the entity id: the session id for session events, else the type's key field), as events.Record does, and partition with Kafka's default murmur2 partitioner (librdkafka clients: partitioner=murmur2_random)", e.Partition, e.Topic, e.Key, e.Want, rk)
}

// StructuredJSON returns the CloudEvents JSON form of r, converting a
// binary-mode record; an event without the time attribute gets
// RecordTime(r.Timestamp), as FromRecord does.
func StructuredJSON(r *kgo.Record) ([]byte, error) {
	raw, err := structuredJSON(r)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Time *string `json:"time"`
	}
	if err := gojson.Unmarshal(raw, &probe); err != nil || probe.Time != nil {
		return raw, nil // ParseEvent reports what is wrong with it
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) < 2 || trimmed[0] != '{' {
		return raw, nil
	}
	ts, _ := json.Marshal(RecordTime(r.Timestamp))
	out := make([]byte, 0, len(trimmed)+len(ts)+10)
	out = append(out, `{"time":`...)
	out = append(out, ts...)
	if rest := bytes.TrimSpace(trimmed[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, trimmed[1:]...), nil
}

// structuredJSON is the CloudEvents JSON form of r as recorded (binary
// mode converted). A content-type of the CloudEvents media type
// (application/cloudevents…, in any case) is structured mode whatever
// other headers the record has, as the Kafka protocol binding says (§3.1:
// "If the header value is prefixed with the CloudEvents media type …, the
// receiver uses structured mode, otherwise it defaults to binary mode"):
// a ce_traceparent header beside a structured event made it parse as
// binary mode and dead-lettered it (a raw-Kafka walkthrough, 2026-11-30).
//
// A content-type of the JSON Batch Format (application/cloudevents-batch+json)
// is refused with a ValidationError at "/" saying so: the Kafka binding
// has binary and structured modes only (§1.3), and a record holds one
// event, keyed by its entity (Key). Before, the reason was "an event must
// be a JSON object" or, with ce_ headers, "missing properties
// 'specversion', 'id', …", which named neither the header nor the fix.
func structuredJSON(r *kgo.Record) ([]byte, error) {
	if ct, ok := recordContentType(r); ok && cloudEventsMediaType(ct) {
		// the prefix first: every record Chronicle writes is in structured
		// mode, and ParseMediaType allocates
		if len(ct) >= len(batchPrefix) && strings.EqualFold(ct[:len(batchPrefix)], batchPrefix) {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != ContentTypeBatch {
				return r.Value, nil // another format: the parse says what is wrong
			}
			return nil, &ValidationError{Index: -1, Pointer: "/", Reason: fmt.Sprintf("header content-type %q: the Kafka protocol binding of CloudEvents has binary and structured content modes only, no batched mode: produce each event as a record of its own, keyed with its entity (events.Key)", ct)}
		}
		if len(r.Value) == 0 {
			return nil, tombstoneError("/")
		}
		return r.Value, nil
	}
	var binary bool
	attrs := map[string]any{}
	contentType, hasContentType := "", false
	for _, h := range r.Headers {
		k := strings.ToLower(h.Key)
		switch {
		case k == headerContentType:
			contentType, hasContentType = string(h.Value), true
		case strings.HasPrefix(k, binaryPrefix):
			binary = true
			name := strings.TrimPrefix(k, binaryPrefix)
			// JSON encoding would replace invalid UTF-8 with U+FFFD, so two
			// different sources (idempotency keys) could become one
			if !utf8.Valid(h.Value) {
				return nil, &ValidationError{Index: -1, Pointer: "/" + name, Reason: "binary-mode header " + h.Key + " is not valid UTF-8"}
			}
			attrs[name] = string(h.Value)
		}
	}
	if !binary {
		if len(r.Value) == 0 {
			return nil, tombstoneError("/")
		}
		return r.Value, nil
	}
	// the Kafka binding maps the content-type header to datacontenttype,
	// kept as sent (parameters included), and without the header the
	// event has none, as HTTP binary mode does; before, every binary
	// record read as plain application/json, invented when no header was
	// sent and stripped of "; charset=utf-8" (a Node.js and a Python
	// integrator's walkthroughs). A media type's case does not count (RFC
	// 9110): Application/JSON is JSON; application/json-seq is not
	if hasContentType {
		if mt, params, err := mime.ParseMediaType(contentType); err != nil || mt != ContentTypeJSON || !UTF8Charset(params) {
			return nil, &ValidationError{Index: -1, Pointer: "/datacontenttype", Reason: fmt.Sprintf("header content-type %q: only application/json data is accepted, in UTF-8 (RFC 8259, section 8.1)", contentType)}
		}
		attrs["datacontenttype"] = strings.TrimSpace(contentType)
	} else if ct, ok := attrs["datacontenttype"].(string); ok {
		// a ce_datacontenttype header, which the binding does not use, is
		// kept as sent: the envelope's schema judges it
		if mt, params, err := mime.ParseMediaType(ct); err != nil || mt != ContentTypeJSON || !UTF8Charset(params) {
			return nil, &ValidationError{Index: -1, Pointer: "/datacontenttype", Reason: fmt.Sprintf("%q: only application/json data is accepted, in UTF-8 (RFC 8259, section 8.1)", ct)}
		}
	}
	attrs["data"] = json.RawMessage(r.Value)
	if len(r.Value) == 0 {
		return nil, tombstoneError("/data")
	}
	if !json.Valid(r.Value) {
		return nil, &ValidationError{Index: -1, Pointer: "/data", Reason: "binary-mode value is not valid JSON"}
	}
	return json.Marshal(attrs)
}

// tombstoneError is the refusal of a record without a value (a
// tombstone: kafkajs's value null, a compacted topic's delete): its letter
// said "not valid JSON: EOF", which named neither (a kafkajs producer's
// walkthrough, 2026-12-04).
func tombstoneError(pointer string) error {
	return &ValidationError{Index: -1, Pointer: pointer, Reason: "the record has no value (a tombstone): an event is the record's value, the whole event in structured mode, its data in binary mode; Chronicle's topics are not compacted, and a tombstone deletes nothing from its log or projections"}
}

// UTF8Charset reports whether a media type's parameters (as
// mime.ParseMediaType returns them) name no charset, or UTF-8 in any case
// ("utf-8", "UTF8"): JSON is UTF-8 (RFC 8259, section 8.1). A Kafka
// binary record, a produced datacontenttype, an HTTP JSON body and a /mcp
// POST are checked with it; before, charset=latin-1 was taken and read as
// UTF-8 (a re-test, 2026-12-01).
func UTF8Charset(params map[string]string) bool {
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}

// structuredMode reports whether r's content-type header (the last one,
// as a repeated header counts) names the CloudEvents media type.
func structuredMode(r *kgo.Record) bool {
	ct, _ := recordContentType(r)
	return cloudEventsMediaType(ct)
}

// recordContentType is r's content-type header, the last one when it is
// repeated; ok is false when r has none.
func recordContentType(r *kgo.Record) (ct string, ok bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Key, headerContentType) {
			ct, ok = string(h.Value), true
		}
	}
	return ct, ok
}

// batchPrefix starts ContentTypeBatch, in any case.
const batchPrefix = "application/cloudevents-batch"

// cloudEventsMediaType reports whether ct starts with the CloudEvents
// media type, application/cloudevents, in any case.
func cloudEventsMediaType(ct string) bool {
	return len(ct) >= len("application/cloudevents") && strings.EqualFold(ct[:len("application/cloudevents")], "application/cloudevents")
}

// structuredHint adds to err, a parse's refusal of r's value as a whole
// (pointer "/"), what a record in structured mode with a required
// attribute as a ce_ header was read as: its content-type says
// structured mode, so the value is the whole event and the ce_ headers
// are not read (Kafka binding, §3.1), while its producer meant binary
// mode. Before, the reason said only "missing properties 'specversion',
// 'id', …", which the producer had sent, as headers. Any other err is
// returned as it is. A required attribute as a ce- header (the HTTP
// binding's name, where the Kafka binding's is ce_) is said so whatever
// the content-type: before, such a record's reason said only the missing
// properties (a kafkajs producer's walkthrough, 2026-12-04).
func structuredHint(r *kgo.Record, err error) error {
	ve, ok := err.(*ValidationError)
	if !ok || ve.Pointer != "/" {
		return err // a member's refusal: the value was an event
	}
	for _, h := range r.Headers {
		if k := strings.ToLower(h.Key); k == "ce-id" || k == "ce-type" || k == "ce-specversion" || k == "ce-source" {
			hinted := *ve
			hinted.Reason += fmt.Sprintf(" (the record's header %s is the CloudEvents HTTP binding's name, which the Kafka protocol binding does not read: its attribute headers are ce_ with an underscore, ce_id, ce_type, ce_source, ce_specversion; with them and content-type application/json the value is the data, binary mode)", h.Key)
			return &hinted
		}
	}
	if !structuredMode(r) {
		return err
	}
	for _, h := range r.Headers {
		// a required attribute as a header (ce_traceparent beside a
		// structured event is an extension, and no sign of binary mode)
		if k := strings.ToLower(h.Key); k == binaryPrefix+"id" || k == binaryPrefix+"type" || k == binaryPrefix+"specversion" || k == binaryPrefix+"source" {
			ct, _ := recordContentType(r)
			hinted := *ve
			hinted.Reason += fmt.Sprintf(" (the record's content-type %q is structured mode, where the value is the whole event and ce_ headers are not read: for binary mode, with the attributes as ce_ headers and the data as the value, send content-type application/json)", ct)
			return &hinted
		}
	}
	return err
}
