// Package events defines Chronicle's event model: the CloudEvents 1.0
// envelope, the event types and the topics they live on, JSON Schema
// validation of every producer path, the Kafka protocol binding
// (structured and binary content modes) and an acknowledging producer.
package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// SpecVersion is the CloudEvents specification version of every envelope.
const SpecVersion = "1.0"

// ContentTypeJSON is the only datacontenttype Chronicle accepts for data.
const ContentTypeJSON = "application/json"

// ContentTypeCloudEvents is the Kafka content-type header of a record in
// CloudEvents structured content mode.
const ContentTypeCloudEvents = "application/cloudevents+json"

// ContentTypeBatch is the media type of the JSON Batch Format (CloudEvents
// JSON Event Format, section 4): a JSON array of events, which POST
// /v1/events accepts (batched content mode of the HTTP binding) and a
// Kafka record may not carry (the Kafka binding has no batched mode: the
// record is dead-lettered saying so).
const ContentTypeBatch = "application/cloudevents-batch+json"

// DefaultScope is the scope of an event that carries none.
const DefaultScope = "org:default"

// Envelope is one CloudEvents 1.0 event with Chronicle's extension
// attributes. Its JSON form is the CloudEvents JSON format (structured
// content mode); attribute names are the CloudEvents ones.
//
// (scope, source, id) identifies an event — the effective scope
// (EffectiveScope), then CloudEvents' (source, id) — and is the
// idempotency key consumers use to drop duplicates: two tenants' events
// may share a (source, id), so a consumer that drops by (source, id) alone
// drops one tenant's events as another's repeats. A producer that retries
// must resend the same id.
type Envelope struct {
	SpecVersion string `json:"specversion"`
	ID          string `json:"id"`
	Source      string `json:"source"`
	Type        Type   `json:"type"`
	Subject     string `json:"subject,omitempty"`
	// Time is the time attribute, RFC 3339, kept as sent so re-encoding is
	// byte-stable. It is optional (CloudEvents 1.0): a producer may omit
	// it, and FromRecord then sets it from the Kafka record's timestamp
	// (RecordTime), which is in the log, so replay sees the same time.
	Time string `json:"time,omitempty"`
	// TimeFromLog reports that Time was not sent but set by FromRecord
	// from the record's timestamp: a resend of the event, a new record,
	// gets another time, so the idempotency check leaves it out.
	TimeFromLog     bool   `json:"-"`
	DataContentType string `json:"datacontenttype,omitempty"`
	DataSchema      string `json:"dataschema,omitempty"`
	// SessionID is the extension attribute sessionid: the session an event
	// belongs to; the record key of session-scoped events.
	SessionID string `json:"sessionid,omitempty"`
	// Scope is the extension attribute scope: project:<id>, team:<id> or
	// org:<id>; empty means DefaultScope.
	Scope string `json:"scope,omitempty"`
	// CausationID is the id of the event that caused this one (derived events).
	CausationID string `json:"causationid,omitempty"`
	// CorrelationID groups the events of one flow (for example a PAIR loop).
	CorrelationID string `json:"correlationid,omitempty"`
	// Data is the payload, a JSON object valid against the type's schema.
	Data json.RawMessage `json:"data"`
	// Extensions are the event's other CloudEvents extension attributes
	// (for example traceparent and tracestate of the distributed-tracing
	// extension), by attribute name: a string, a bool or a json.Number.
	// They are kept as sent and encoded after data; an envelope without
	// extensions encodes byte for byte as before they existed.
	Extensions map[string]any `json:"-"`
}

// EventTime parses the time attribute. It returns an error naming the
// attribute when the value is not RFC 3339.
func (e *Envelope) EventTime() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return time.Time{}, fmt.Errorf("events: /time: %q is not an RFC 3339 time", e.Time)
	}
	return t, nil
}

// TimeUTC is Time in UTC ("Z"), as projections keep an event's time:
// the API answers every time in UTC. A time sent with an offset
// ("2026-12-06T10:40:00+05:30") is the same instant written in UTC
// ("2026-12-06T05:10:00Z"; a fraction kept, its trailing zeros dropped);
// one already in UTC ("Z") is returned as sent, byte for byte. Time
// itself stays as sent (the event read back is the event written). A
// Time that does not parse (none reaches a processor: the schema checks
// it) is returned unchanged.
func (e *Envelope) TimeUTC() string {
	if strings.HasSuffix(e.Time, "Z") {
		return e.Time
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return e.Time
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// EffectiveScope is Scope, or DefaultScope when the event carries none.
func (e *Envelope) EffectiveScope() string {
	if e.Scope == "" {
		return DefaultScope
	}
	return e.Scope
}

// DedupKey is source and id, the key of a store written before the scope
// was part of an event's identity (projections' legacy idempotency keys).
// It is not the idempotency key: an event is (scope, source, id) (see
// Envelope), and a consumer that drops repeats by DedupKey drops one
// tenant's events as another's. (It was documented as the idempotency
// key: a Go embedder's walkthrough.)
func (e *Envelope) DedupKey() string { return e.Source + "\x00" + e.ID }

// Decode unmarshals Data into v, with goccy/go-json (encoding/json's
// semantics, about twice as fast: every processor decodes its payloads).
func (e *Envelope) Decode(v any) error {
	if err := gojson.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("events: decode data of %s %s: %w", e.Type, e.ID, err)
	}
	return nil
}

// DerivedIDIn is the id of the n-th derived event of type t in scope that
// the event (causeSource, causeID) caused; Derive gives it to every derived
// event. In the default scope ("" or DefaultScope) it is DerivedID, so the
// ids of events that carry no scope are the ones they always were. In any
// other scope it is the hex of the first 16 bytes of the SHA-256 of
// "source\x00id\x00type\x00n\x00scope": two scopes' events with one
// source and id (another event each, see the README's "Events") cause
// derived events with different ids, as CloudEvents requires source and id
// to be unique per distinct event (before, they shared them, and a
// subscriber deduplicating by source and id dropped one tenant's event as
// the other's duplicate). After the decimal n, DerivedID's preimage ends
// and this one goes on with a NUL and a scope, which always holds a ':',
// so no scoped id can equal an unscoped one; one hash, as DerivedID.
func DerivedIDIn(scope, causeSource, causeID string, t Type, n int) string {
	if scope == "" || scope == DefaultScope {
		return DerivedID(causeSource, causeID, t, n)
	}
	b := make([]byte, 0, len(causeSource)+len(causeID)+len(t)+len(scope)+25)
	b = append(append(append(append(append(append(b, causeSource...), 0), causeID...), 0), t...), 0)
	b = append(append(strconv.AppendInt(b, int64(n), 10), 0), scope...)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// DerivedID returns the deterministic id of the n-th event of type t that
// the event with id causeID caused: a hex SHA-256 prefix of the three, so a
// processor that runs twice over the same event (a replay, a restart after
// a crash) emits byte-identical ids that consumers can drop as duplicates.
// It is the id of a derived event of the default scope; DerivedIDIn gives
// any scope's.
func DerivedID(causeSource, causeID string, t Type, n int) string {
	b := make([]byte, 0, len(causeSource)+len(causeID)+len(t)+24)
	b = append(append(append(append(append(append(b, causeSource...), 0), causeID...), 0), t...), 0)
	h := sha256.Sum256(strconv.AppendInt(b, int64(n), 10)) // the bytes of "%s\x00%s\x00%s\x00%d"
	return hex.EncodeToString(h[:16])
}

// New builds an envelope of type t with data marshalled from payload. It
// fills specversion, datacontenttype and dataschema, and time from at
// (RFC 3339, UTC); a zero at leaves time out, so the Kafka record's
// timestamp stands in for it (the attribute is optional). The caller sets
// the rest. A type that is not one of Types is refused with a
// *ValidationError at /type (the envelope could never be validated,
// produced or applied); marshalling errors are returned as is.
func New(t Type, source, id string, at time.Time, payload any) (Envelope, error) {
	return newEvent(t, source, id, at, payload, true)
}

// NewVerbatim is New for data a producer sent (the HTTP API's workflow
// writes, the memory tools): the data keeps '<', '>' and '&' as given, as
// Envelope.MarshalJSON keeps them, where New writes json.Marshal's HTML
// escapes (\u003c), which made markup six times longer and a 300 KB tool
// result too large for MaxEventBytes. New keeps them so that the records
// importers and processors build keep the bytes they always had (the
// demo's digest). Errors as New's.
func NewVerbatim(t Type, source, id string, at time.Time, payload any) (Envelope, error) {
	return newEvent(t, source, id, at, payload, false)
}

// UnescapeHTML returns the JSON document b with the HTML escapes
// encoding/json writes for '<', '>' and '&' (\u003c, \u003e, \u0026)
// turned back into the characters: the same document, up to six times
// shorter where a string holds markup. Every other escape is kept. A
// state read back from a projection row holds its strings so escaped
// (rows are encoded with the escapes), and a fork's event carried them:
// a state of 300,000 bytes of markup made a fork of 1,800,817 bytes,
// refused above MaxEventBytes (a workflows walkthrough, 2026-11-30).
func UnescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		// an escape: a backslash and the next byte always pair up
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out, i = append(out, '<'), i+5
				continue
			case "003e", "003E":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}

// marshalVerbatim is json.Marshal without its HTML escapes of '<', '>'
// and '&'.
func marshalVerbatim(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func newEvent(t Type, source, id string, at time.Time, payload any, escapeHTML bool) (Envelope, error) {
	if _, ok := registry[t]; !ok {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("unknown event type %q", t)}
	}
	if bad, ok := invalidString(reflect.ValueOf(payload), 0); ok {
		// encoding/json would write each invalid byte as U+FFFD: the log
		// would hold other content than the caller's, without an error,
		// where HTTP refuses such bytes (a producer's walkthrough)
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/data", Reason: fmt.Sprintf("a string of the payload is not valid UTF-8: %q (encoding it would replace the invalid bytes with U+FFFD)", bad)}
	}
	marshal := json.Marshal
	if !escapeHTML {
		marshal = marshalVerbatim
	}
	raw, err := marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: marshal %s data: %w", t, err)
	}
	when := ""
	if !at.IsZero() {
		when = at.UTC().Format(time.RFC3339Nano)
	}
	return Envelope{
		SpecVersion:     SpecVersion,
		ID:              id,
		Source:          source,
		Type:            t,
		Time:            when,
		DataContentType: ContentTypeJSON,
		DataSchema:      SchemaURI(t),
		Data:            raw,
	}, nil
}

// CheckEncoding, when set (tests), makes Marshal and Envelope.MarshalJSON
// marshal with encoding/json too and fail unless the bytes are identical.
// Both marshal with goccy/go-json (two to three times as fast); stored
// rows, records and digests hold its output, so it must be encoding/json's
// byte for byte (pipeline's TestEncodingAgrees runs the bundled sessions
// with it).
var CheckEncoding atomic.Bool

// Marshal encodes v as encoding/json does, byte for byte, with
// goccy/go-json (two to three times as fast): derived events' data,
// projection rows (projections.Tx.SetJSON) and outbox rows. With
// CheckEncoding set it fails on any difference from encoding/json.
func Marshal(v any) ([]byte, error) {
	b, err := gojson.Marshal(v)
	if err == nil && CheckEncoding.Load() {
		std, serr := json.Marshal(v)
		if serr != nil || !bytes.Equal(std, b) {
			return nil, fmt.Errorf("events: goccy/go-json wrote %s, encoding/json %s (%v)", b, std, serr)
		}
	}
	return b, err
}

// Derive builds the n-th derived event of type typ caused by cause, written
// by component source (e.g. "chronicle/sessions"): its id is DerivedIDIn of
// the cause's scope, source and id, its time, sessionid and scope are the cause's, causationid is
// the cause's id and correlationid the cause's (or the cause's id). A
// cause with a W3C traceparent (the distributed-tracing extension) passes
// its trace on: the derived event's traceparent has the same trace id and
// flags and a span id of its own (childTraceparent), its tracestate is the
// cause's, so a trace continues through what Chronicle learned.
//
// A derived event of a type on TopicLearned (read by subscribers, no
// processor) is validated against its schema here; any other is validated
// where it is read — the engine parses and validates every record of the
// topics its processors read once, and dead-letters one that breaks its
// schema with the reason — instead of twice (about a tenth of the CPU of a
// replay, issue 10). pipeline's TestDerivedTopicsAreRead holds every other
// topic a derived type lands on to a reader.
func Derive(cause *Envelope, source string, typ Type, n int, payload any) (Envelope, error) {
	raw, err := Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: marshal %s data: %w", typ, err)
	}
	env := Envelope{
		SpecVersion: SpecVersion, ID: DerivedIDIn(cause.Scope, cause.Source, cause.ID, typ, n),
		Source: source, Type: typ, Time: cause.Time,
		DataContentType: ContentTypeJSON, DataSchema: SchemaURI(typ),
		SessionID: cause.SessionID, Scope: cause.Scope, CausationID: cause.ID, CorrelationID: cause.CorrelationID,
		Data: raw,
	}
	if env.CorrelationID == "" {
		env.CorrelationID = cause.ID
	}
	if tp := childTraceparent(cause.Extensions["traceparent"], env.ID); tp != "" {
		env.Extensions = map[string]any{"traceparent": tp}
		if ts, ok := cause.Extensions["tracestate"].(string); ok && ts != "" {
			env.Extensions["tracestate"] = ts
		}
	}
	if info, ok := Lookup(typ); !ok || info.Topic == TopicLearned {
		if err := Validate(&env); err != nil {
			return Envelope{}, fmt.Errorf("events: derived %s invalid: %w", typ, err)
		}
	}
	return env, nil
}

// childTraceparent continues the cause's W3C trace context (the
// CloudEvents distributed-tracing extension) in an event derived from it:
// the same version, trace id and flags, and a span id of its own, the
// first 8 bytes of the SHA-256 of the derived event's id (deterministic,
// so a replay derives the same). "" when the cause has no valid
// traceparent ("00-<32 hex>-<16 hex>-<2 hex>", lower-case, neither the
// trace id nor the parent id all zeros: W3C Trace Context 3.2.2.3 makes
// both invalid).
func childTraceparent(v any, derivedID string) string {
	tp, _ := v.(string)
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return ""
	}
	trace, flags := tp[3:35], tp[53:]
	if !isLowerHex(trace) || !isLowerHex(tp[36:52]) || !isLowerHex(flags) || strings.Trim(trace, "0") == "" || strings.Trim(tp[36:52], "0") == "" {
		return ""
	}
	h := sha256.Sum256([]byte(derivedID))
	if [8]byte(h[:8]) == ([8]byte{}) {
		h[7] = 1 // an all-zero span id is invalid
	}
	return "00-" + trace + "-" + hex.EncodeToString(h[:8]) + "-" + flags
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// invalidString returns the first string reachable from v (struct fields,
// map keys and values, slice and array elements, through pointers and
// interfaces) that is not valid UTF-8. Byte slices (json.RawMessage,
// base64 []byte) are not strings: Producer.Publish checks the encoded
// data's bytes. depth bounds a cyclic value, which encoding/json refuses
// anyway.
func invalidString(v reflect.Value, depth int) (string, bool) {
	if depth > 64 || !v.IsValid() {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) {
			return s, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidString(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				if s, ok := invalidString(v.Field(i), depth+1); ok {
					return s, true
				}
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if s, ok := invalidString(it.Key(), depth+1); ok {
				return s, true
			}
			if s, ok := invalidString(it.Value(), depth+1); ok {
				return s, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := 0; i < v.Len(); i++ {
			if s, ok := invalidString(v.Index(i), depth+1); ok {
				return s, true
			}
		}
	}
	return "", false
}
