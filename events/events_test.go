package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// typeCase is one file of testdata/types: a valid instance of the type and
// invalid ones with the JSON pointer the rejection must name.
type typeCase struct {
	Valid   json.RawMessage `json:"valid"`
	Invalid []struct {
		Pointer string          `json:"pointer"`
		Event   json.RawMessage `json:"event"`
	} `json:"invalid"`
}

func loadCases(t *testing.T) map[events.Type]typeCase {
	t.Helper()
	files, err := filepath.Glob("testdata/types/*.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[events.Type]typeCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c typeCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[events.Type(strings.TrimSuffix(filepath.Base(f), ".json"))] = c
	}
	return out
}

// Every producer type has a case file, so a new type cannot ship untested.
func TestEveryProducerTypeHasCases(t *testing.T) {
	cases := loadCases(t)
	for _, typ := range events.Types() {
		ti, _ := events.Lookup(typ)
		if _, ok := cases[typ]; !ok && !ti.Derived {
			t.Errorf("no testdata/types/%s.json", typ)
		}
	}
}

// Every type lives on a topic Chronicle creates (AllTopics): a producer
// writing to another fails after its metadata refreshes with
// UNKNOWN_TOPIC_OR_PARTITION, and a processor reading it is refused
// (processors.CheckNames). A guard for a new family on a topic of its own
// (the README's "Adding an event type").
func TestEveryTypeIsOnACreatedTopic(t *testing.T) {
	for _, typ := range events.Types() {
		ti, _ := events.Lookup(typ)
		if !slices.Contains(events.AllTopics, ti.Topic) {
			t.Errorf("%s is written to %s, which is not in events.AllTopics", typ, ti.Topic)
		}
	}
}

// A type's key field (TypeInfo.KeyField, KeyOver) is a string member of
// its schema: misspelled in the registry, every event of the type without
// a sessionid is refused as lacking it, while the schema refuses the
// member so named (a guard for a new type: the README's "Adding an event
// type").
func TestKeyFieldsAreSchemaMembers(t *testing.T) {
	for _, typ := range events.Types() {
		ti, _ := events.Lookup(typ)
		raw, ok := events.Schema(string(typ))
		if !ok {
			t.Errorf("%s: no schema", typ)
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		for _, f := range []string{ti.KeyField, ti.KeyOver} {
			if f == "" || f == "-" {
				continue
			}
			var p struct {
				Type any `json:"type"`
			}
			if m, ok := s.Properties[f]; !ok || json.Unmarshal(m, &p) != nil || p.Type != nil && p.Type != "string" {
				t.Errorf("%s: key field %q is not a string member of schemas/%s.json", typ, f, typ)
			}
		}
	}
}

func TestValidationNamesTheField(t *testing.T) {
	for typ, c := range loadCases(t) {
		if _, err := events.ParseProducerEvent(c.Valid); err != nil {
			t.Errorf("%s: valid instance rejected: %v", typ, err)
		}
		for i, inv := range c.Invalid {
			_, err := events.ParseProducerEvent(inv.Event)
			var ve *events.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%s invalid[%d]: want a ValidationError at %s, got %v", typ, i, inv.Pointer, err)
				continue
			}
			if ve.Pointer != inv.Pointer || ve.Reason == "" {
				t.Errorf("%s invalid[%d]: pointer %q reason %q, want pointer %q", typ, i, ve.Pointer, ve.Reason, inv.Pointer)
			}
		}
	}
}

func TestEnvelopeRejections(t *testing.T) {
	b, err := os.ReadFile("testdata/envelope_invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Pointer string          `json:"pointer"`
		Event   json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		_, err := events.ParseProducerEvent(c.Event)
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.Pointer {
			t.Errorf("case %d: want rejection at %s, got %v", i, c.Pointer, err)
		}
	}
	if _, err := events.ParseProducerEvent([]byte(`{"specversion":`)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("truncated JSON: got %v", err)
	}
}

func TestDerivedTypeRejectedFromProducers(t *testing.T) {
	env, err := events.New(events.EvaluationCompleted, "test", "e1", time.Unix(0, 0), events.EvaluationData{
		SessionID: "s", Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}, Recommendation: events.MeetsCriteria, Composite: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := events.Validate(&env); err != nil {
		t.Fatalf("a derived event itself is valid: %v", err)
	}
	raw, _ := json.Marshal(env)
	_, err = events.ParseProducerEvent(raw)
	if !errors.Is(err, events.ErrDerivedType) && (err == nil || !strings.Contains(err.Error(), events.ErrDerivedType.Error())) {
		t.Fatalf("want derived-type rejection, got %v", err)
	}
}

func TestParseBatchIndex(t *testing.T) {
	cases := loadCases(t)
	good := cases[events.MemoryFeedback].Valid
	bad := cases[events.MemoryFeedback].Invalid[0].Event
	_, err := events.ParseBatch([][]byte{good, good, bad})
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Index != 2 || ve.Pointer != "/data/signal" {
		t.Fatalf("want index 2 /data/signal, got %v", err)
	}
	if !strings.HasPrefix(ve.Error(), "event 2: /data/signal:") {
		t.Fatalf("message %q", ve.Error())
	}
}

func startBroker(t *testing.T) []string {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

// Every type round-trips: validated, produced (structured mode), consumed
// back from its topic and decoded to the same envelope.
func TestRoundTripThroughKafka(t *testing.T) {
	addrs := startBroker(t)
	p, err := events.NewProducer(events.ProducerConfig{Brokers: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sent := map[string]events.Envelope{}
	var envs []events.Envelope
	for typ, c := range loadCases(t) {
		var env events.Envelope
		if err := json.Unmarshal(c.Valid, &env); err != nil {
			t.Fatal(err)
		}
		sent[env.ID] = env
		envs = append(envs, env)
		_ = typ
	}
	if err := p.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	topics := map[string]map[int32]kgo.Offset{}
	for _, tp := range events.AllTopics {
		topics[string(tp)] = map[int32]kgo.Offset{0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(topics))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]events.Envelope{}
	for len(got) < len(sent) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("got %d of %d events back", len(got), len(sent))
		}
		fs.EachRecord(func(r *kgo.Record) {
			env, err := events.FromRecord(r)
			if err != nil {
				t.Errorf("decode %s: %v", r.Value, err)
				return
			}
			ti, _ := events.Lookup(env.Type)
			if string(ti.Topic) != r.Topic {
				t.Errorf("%s on topic %s, want %s", env.Type, r.Topic, ti.Topic)
			}
			key, _ := events.Key(&env)
			if string(r.Key) != key {
				t.Errorf("%s: key %q want %q", env.Type, r.Key, key)
			}
			got[env.ID] = env
		})
	}
	for id, want := range sent {
		g := got[id]
		var a, b any
		_ = json.Unmarshal(want.Data, &a)
		_ = json.Unmarshal(g.Data, &b)
		want.Data, g.Data = nil, nil
		if !reflect.DeepEqual(want, g) || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: sent %+v %v, got %+v %v", id, want, a, g, b)
		}
	}
}

// Binary content mode: attributes in ce_ headers, data in the value.
func TestBinaryModeAccepted(t *testing.T) {
	rec := &kgo.Record{
		Topic: string(events.TopicMemories), Key: []byte("org:default/m1"),
		Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`),
		Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b1")},
			{Key: "ce_source", Value: []byte("kcat")}, {Key: "ce_type", Value: []byte("memory.feedback.v1")},
			{Key: "ce_time", Value: []byte("2026-11-21T10:00:00Z")}, {Key: "content-type", Value: []byte("application/json")},
		},
	}
	env, err := events.FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	var d events.MemoryFeedbackData
	if err := env.Decode(&d); err != nil || env.ID != "b1" || d.Signal != "task_completion" {
		t.Fatalf("got %+v %+v %v", env, d, err)
	}
	// a media type in any case, as structured mode and HTTP take it (it
	// was dead-lettered: a producer walkthrough)
	rec.Headers[5].Value = []byte("Application/JSON; charset=UTF-8")
	if env, err := events.FromRecord(rec); err != nil || env.DataContentType != "Application/JSON; charset=UTF-8" {
		t.Fatalf("content-type Application/JSON; charset=UTF-8: %q %v; want it kept as sent", env.DataContentType, err)
	}
	// the Kafka binding maps content-type to datacontenttype: none sent,
	// none stored; another media type is refused (before, application/json
	// was invented, parameters were dropped, and application/json-seq
	// passed a prefix test: two integrators' walkthroughs, 2026-12-01)
	withoutCT := *rec
	withoutCT.Headers = rec.Headers[:5:5]
	if env, err := events.FromRecord(&withoutCT); err != nil || env.DataContentType != "" {
		t.Fatalf("no content-type: datacontenttype %q %v; want none", env.DataContentType, err)
	}
	for _, bad := range []string{"application/json-seq", "text/plain", "not a media type;;", "application/json; charset=latin-1"} {
		rec.Headers[5].Value = []byte(bad)
		var ve *events.ValidationError
		if _, err := events.FromRecord(rec); !errors.As(err, &ve) || ve.Pointer != "/datacontenttype" {
			t.Fatalf("content-type %q: %v; want a refusal at /datacontenttype", bad, err)
		}
	}
	rec.Headers[5].Value = []byte("application/json")
	// time is optional: the record's timestamp stands in; extension
	// attributes ride along as ce_ headers
	rec.Headers = append(rec.Headers[:4:4], kgo.RecordHeader{Key: "ce_traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")})
	rec.Timestamp = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	env, err = events.FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if env.Time != "2026-11-21T09:00:00.123456789Z" {
		t.Fatalf("time %q, want the record timestamp in UTC", env.Time)
	}
	if env.Extensions["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("extensions %v", env.Extensions)
	}
	raw, err := events.StructuredJSON(rec)
	if err != nil || !strings.HasPrefix(string(raw), `{"time":"2026-11-21T09:00:00.123456789Z",`) {
		t.Fatalf("structured form %s %v", raw, err)
	}
	rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "ce_Trace-Parent", Value: []byte("x")})
	var ve *events.ValidationError
	if _, err := events.FromRecord(rec); !errors.As(err, &ve) || ve.Pointer != "/trace-parent" {
		t.Fatalf("bad extension name: %v", err)
	}
}

// Extension attributes round-trip through the JSON format and a
// structured-mode record; an event without them encodes as it always has.
func TestExtensionsRoundTrip(t *testing.T) {
	plain := []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","datacontenttype":"application/json","scope":"project:demo","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`)
	env, err := events.ParseProducerEvent(plain)
	if err != nil {
		t.Fatal(err)
	}
	if env.Time != "" || env.Extensions != nil {
		t.Fatalf("time %q extensions %v", env.Time, env.Extensions)
	}
	if b, _ := json.Marshal(env); string(b) != string(plain) {
		t.Fatalf("without extensions the encoding changed:\n%s\n%s", b, plain)
	}
	withExt := []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","datacontenttype":"application/json","scope":"project:demo","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true},"n":7,"ok":true,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"rojo=00f067aa0ba902b7"}`)
	env, err = events.ParseProducerEvent(withExt)
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Extensions) != 4 || env.Extensions["tracestate"] != "rojo=00f067aa0ba902b7" || env.Extensions["n"] != json.Number("7") || env.Extensions["ok"] != true {
		t.Fatalf("extensions %#v", env.Extensions)
	}
	if b, _ := json.Marshal(&env); string(b) != string(withExt) {
		t.Fatalf("re-encoding differs:\n%s\n%s", b, withExt)
	}
	rec, err := events.Record(&env)
	if err != nil {
		t.Fatal(err)
	}
	rec.Timestamp = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	back, err := events.FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if back.Time != "2026-01-02T03:04:05Z" || back.Extensions["traceparent"] != env.Extensions["traceparent"] {
		t.Fatalf("from record: time %q extensions %v", back.Time, back.Extensions)
	}
	// data_base64 (what the SDKs send for data given as bytes) becomes data
	b64 := []byte(`{"specversion":"1.0","id":"e2","source":"test","type":"memory.feedback.v1","datacontenttype":"application/json","data_base64":"eyJtZW1vcnlfaWQiOiJtMSIsInNpZ25hbCI6ImV4cGxpY2l0X2ZlZWRiYWNrIiwicG9zaXRpdmUiOnRydWV9"}`)
	if e2, err := events.ParseProducerEvent(b64); err != nil || string(e2.Data) != `{"memory_id":"m1","signal":"explicit_feedback","positive":true}` || e2.Extensions != nil {
		t.Fatalf("data_base64: %v %s %v", err, e2.Data, e2.Extensions)
	}
	// data_base64 whose JSON breaks the type's schema: the reason says
	// where the data came from (it named a /data the event never sent)
	bad := []byte(`{"specversion":"1.0","id":"e3","source":"test","type":"memory.feedback.v1","data_base64":"eyJtZW1vcnlfaWQiOiJtMSJ9"}`)
	if _, err := events.ParseProducerEvent(bad); err == nil || !strings.Contains(err.Error(), "decoded from data_base64") {
		t.Fatalf("bad data_base64: %v, want the reason to name data_base64", err)
	}
	// an array (WzEsMl0= is [1,2]) breaks the envelope's "data is an
	// object": named alike (a re-test)
	arr := []byte(`{"specversion":"1.0","id":"e4","source":"test","type":"memory.feedback.v1","data_base64":"WzEsMl0="}`)
	if _, err := events.ParseProducerEvent(arr); err == nil || !strings.Contains(err.Error(), "decoded from data_base64") {
		t.Fatalf("data_base64 of an array: %v, want the reason to name data_base64", err)
	}
	var viaStd events.Envelope
	if err := json.Unmarshal(withExt, &viaStd); err != nil || len(viaStd.Extensions) != 4 || viaStd.Extensions["n"] != json.Number("7") {
		t.Fatalf("UnmarshalJSON: %v %#v", err, viaStd.Extensions)
	}
}

// Producing to a topic that does not exist fails fast with a clear error.
func TestProduceToMissingTopicFailsFast(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := events.NewProducer(events.ProducerConfig{Brokers: c.ListenAddrs(), MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var env events.Envelope
	if err := json.Unmarshal(loadCases(t)[events.MemoryFeedback].Valid, &env); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = p.Publish(ctx, env)
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
		t.Fatalf("want an unknown-topic error, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Publish ran into the test deadline after %v instead of failing", time.Since(start))
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// Every schema file belongs to a registered type and every registered type
// has a schema, so a new type cannot be half-added.
func TestSchemasAndRegistryAgree(t *testing.T) {
	files, err := filepath.Glob("../schemas/*.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[events.Type]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "cloudevent" {
			continue
		}
		if _, ok := events.Lookup(events.Type(name)); !ok {
			t.Errorf("schema %s has no registry entry in types.go", name)
		}
		seen[events.Type(name)] = true
	}
	for _, typ := range events.Types() {
		if !seen[typ] {
			t.Errorf("type %s has no schema file", typ)
		}
	}
}

// Issue 10 item 8: with the broker gone, Publish answers within
// PublishTimeout (shortened to 2 s here from its 15 s default) with
// ErrNotAcknowledged instead of hanging.
func TestPublishIsBoundedWhenTheBrokerIsDown(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := events.NewProducer(events.ProducerConfig{Brokers: b.Addrs(), PublishTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env, err := events.New(events.MemoryFeedback, "test", "down-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), env); err != nil {
		t.Fatalf("with the broker up: %v", err)
	}
	b.Close()
	env.ID = "down-2"
	start := time.Now()
	err = p.Publish(context.Background(), env)
	if !errors.Is(err, events.ErrNotAcknowledged) {
		t.Fatalf("with the broker down: %v, want ErrNotAcknowledged", err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Fatalf("Publish returned after %v with a 2 s PublishTimeout", el)
	}
	// the error names the cause, not only the deadline (a new user's
	// walkthrough: "context deadline exceeded" after 15 s said nothing of
	// the refused connection)
	if !strings.Contains(err.Error(), "last connection attempt") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("with the broker down: %v; want the refused connection named", err)
	}
}

// A member repeated within one object is refused on the producer paths
// with its pointer (a new user's walkthrough: {"id":"x8","id":"x9"} was
// accepted and the last id silently won); the processors' parse of the log
// keeps accepting it, so logs written before replay as they did.
func TestRepeatedMemberIsRefused(t *testing.T) {
	const data = `{"memory_id":"m1","signal":"explicit_feedback","positive":true}`
	for _, c := range []struct{ raw, pointer string }{
		{`{"specversion":"1.0","id":"x8","id":"x9","source":"qa","type":"memory.feedback.v1","data":` + data + `}`, "/id"},
		{`{"specversion":"1.0","id":"x8","source":"qa","type":"memory.feedback.v1","data":{"memory_id":"m1","memory_id":"m2","signal":"explicit_feedback","positive":true}}`, "/data/memory_id"},
		{`{"specversion":"1.0","id":"x8","source":"qa","type":"memory.feedback.v1","traceparent":"a","traceparent":"b","data":` + data + `}`, "/traceparent"},
		{`{"specversion":"1.0","id":"x8","source":"qa","type":"memory.feedback.v1","data":` + data + `,"a~/b":1,"a~/b":2}`, "/a~0~1b"},
	} {
		_, err := events.ParseProducerEvent([]byte(c.raw))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, "appears twice") {
			t.Errorf("%s: %v; want a ValidationError at %s", c.raw, err, c.pointer)
		}
	}
	env, err := events.ParseEvent([]byte(`{"specversion":"1.0","id":"x8","id":"x9","source":"qa","type":"memory.feedback.v1","data":` + data + `}`))
	if err != nil || env.ID != "x9" {
		t.Fatalf("the processors' parse: %v, id %q; want it accepted as before (the last id)", err, env.ID)
	}
	if _, err := events.ParseProducerEvent([]byte(`{"specversion":"1.0","id":"x8","source":"qa","type":"memory.feedback.v1","data":` + data + `}`)); err != nil {
		t.Fatalf("an event without repeats: %v", err)
	}
}

// datacontenttype is a media type: application/json with parameters, or in
// another case, is accepted in structured mode as binary mode's
// Content-Type is (a new user's walkthrough: "application/json;
// charset=utf-8" was a 400), and kept as sent; other types are refused.
func TestDataContentTypeParameters(t *testing.T) {
	const rest = `"specversion":"1.0","id":"ct","source":"qa","type":"memory.feedback.v1","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}`
	for _, c := range []struct {
		ct string
		ok bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"application/json;charset=UTF-8", true},
		{"Application/JSON", true},
		{"text/plain", false},
		{"application/jsonx", false},
		{"application/json-seq", false},
	} {
		env, err := events.ParseProducerEvent([]byte(`{"datacontenttype":"` + c.ct + `",` + rest + `}`))
		var ve *events.ValidationError
		switch {
		case c.ok && (err != nil || env.DataContentType != c.ct):
			t.Errorf("%q: %v, kept %q; want it accepted as sent", c.ct, err, env.DataContentType)
		case !c.ok && (!errors.As(err, &ve) || ve.Pointer != "/datacontenttype"):
			t.Errorf("%q: %v; want a ValidationError at /datacontenttype", c.ct, err)
		}
	}
}

// A derived event continues its cause's W3C trace: the same trace id and
// flags, a span id of its own derived from its id (the same on every
// derivation, so a replay derives it again), the cause's tracestate; no
// trace context from a cause without a valid one (a new user's
// walkthrough: traces stopped at Chronicle).
func TestDeriveContinuesTheTrace(t *testing.T) {
	cause, err := events.New(events.MemoryFeedback, "test", "tr-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "explicit_feedback", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	cause.Extensions = map[string]any{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01", "tracestate": "rojo=00f067aa0ba902b7"}
	derive := func(c *events.Envelope) events.Envelope {
		t.Helper()
		d, err := events.Derive(c, "chronicle/test", events.MemoryConfidenceChanged, 0, map[string]any{"memory_id": "m1", "old": 0.5, "new": 0.6, "signals_applied": []any{}, "reason": "signal"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := derive(&cause)
	tp, _ := d.Extensions["traceparent"].(string)
	if !strings.HasPrefix(tp, "00-"+trace+"-") || !strings.HasSuffix(tp, "-01") || len(tp) != 55 || strings.Contains(tp, "00f067aa0ba902b7") {
		t.Fatalf("derived traceparent %q; want trace %s, a span of its own, flags 01", tp, trace)
	}
	if d.Extensions["tracestate"] != "rojo=00f067aa0ba902b7" {
		t.Fatalf("derived tracestate %v", d.Extensions["tracestate"])
	}
	if again := derive(&cause); again.Extensions["traceparent"] != tp {
		t.Fatalf("a second derivation gave %v, the first %s", again.Extensions["traceparent"], tp)
	}
	for _, bad := range []any{nil, "", "00-" + trace + "-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		// an all-zero parent id is invalid too (W3C Trace Context 3.2.2.3);
		// it was continued (a subscriber's walkthrough)
		"00-" + trace + "-0000000000000000-01",
		"00-" + strings.ToUpper(trace) + "-00f067aa0ba902b7-01", 7} {
		c := cause
		c.Extensions = map[string]any{"traceparent": bad}
		if d := derive(&c); d.Extensions != nil {
			t.Errorf("traceparent %v: derived extensions %v; want none", bad, d.Extensions)
		}
	}
}

// The CloudEvents JSON format (1.0.2, 2.2) says a null attribute "MUST be
// treated as the equivalent of unset or omitted", and its own examples
// send "subject": null. A producer's event with null optional attributes
// or extensions is the event without them: same envelope, same encoding,
// so a resend without the nulls is a plain duplicate. A null required
// attribute is a missing one. Before, every null was a 400 ("/subject: got
// null, want string"; found by a new user's walkthrough with the spec's
// examples).
func TestNullAttributeIsAbsent(t *testing.T) {
	plain := []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","scope":"project:demo","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true},"myext":"v"}`)
	want, err := events.ParseProducerEvent(plain)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(&want)
	withNulls := []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","subject":null,"time":null,"datacontenttype":null,"dataschema":null,"sessionid":null,"causationid":null,"correlationid":null,"unsetextension":null,"scope":"project:demo","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true},"myext":"v"}`)
	got, err := events.ParseProducerEvent(withNulls)
	if err != nil {
		t.Fatalf("null optional attributes: %v", err)
	}
	if b, _ := json.Marshal(&got); string(b) != string(wantJSON) {
		t.Fatalf("with null attributes the event encodes as\n%s\nwant\n%s", b, wantJSON)
	}
	if _, err := events.ParseBatch([][]byte{withNulls}); err != nil {
		t.Fatalf("ParseBatch: %v", err)
	}
	// a null scope is the default scope, as an absent one is
	noScope := []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","scope":null,"data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`)
	if env, err := events.ParseProducerEvent(noScope); err != nil || env.Scope != "" {
		t.Fatalf("null scope: %v %q", err, env.Scope)
	}
	// a required attribute sent as null is missing
	var ve *events.ValidationError
	_, err = events.ParseProducerEvent([]byte(`{"specversion":"1.0","id":null,"source":"test","type":"memory.feedback.v1","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`))
	if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "'id'") {
		t.Fatalf("null id: %v, want a missing id", err)
	}
	// null data is not absent data: the type's schema judges it
	if _, err := events.ParseProducerEvent([]byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","data":null}`)); !errors.As(err, &ve) || ve.Pointer != "/data" {
		t.Fatalf("null data: %v, want a refusal at /data", err)
	}
}

// NewVerbatim keeps '<', '>' and '&' in the data as given; New keeps
// json.Marshal's escapes (the bytes importers' and processors' records
// always had).
func TestNewVerbatimKeepsMarkup(t *testing.T) {
	d := events.MemoryRecordedData{MemoryID: "m1", Title: "<b>fares & fees</b>", Description: "d", Content: "c", Outcome: "success", Source: "explicit"}
	v, err := events.NewVerbatim(events.MemoryRecorded, "test", "a", time.Unix(1700000000, 0), d)
	if err != nil || !strings.Contains(string(v.Data), `"<b>fares & fees</b>"`) {
		t.Fatalf("NewVerbatim: %s %v", v.Data, err)
	}
	e, err := events.New(events.MemoryRecorded, "test", "a", time.Unix(1700000000, 0), d)
	if err != nil || !strings.Contains(string(e.Data), `"\u003cb\u003efares \u0026 fees\u003c/b\u003e"`) {
		t.Fatalf("New: %s %v", e.Data, err)
	}
	if _, err := events.NewVerbatim("no.such.type.v1", "test", "a", time.Time{}, d); err == nil {
		t.Fatal("NewVerbatim of an unknown type: no error")
	}
}

// A time Go's RFC 3339 parser refuses (a lower-case t or z, a leap second),
// a datacontenttype that is no media type, and a control character in a
// String attribute are refused by producer paths, naming the attribute.
// Before, each was acknowledged with 202: the time then dead-lettered the
// session's derived memory ("/time: … is not an RFC 3339 time", the
// memory bank parses it), the official Go SDK could not read the event
// back, and "a\nb" could not be sent on in binary mode (a walkthrough,
// 2026-11-30). The processors' parse of what they consume still takes
// them, so a log written before replays as it did.
func TestProducerTimesMediaTypesAndControlCharacters(t *testing.T) {
	checkProducerOnly(t, []producerCase{
		{`"time":"2024-07-01t00:00:01z"`, "/time"}, {`"time":"2024-07-01T00:00:01z"`, "/time"},
		{`"time":"2016-12-31T23:59:60Z"`, "/time"},
		{`"datacontenttype":"application/json; charset"`, "/datacontenttype"}, {`"datacontenttype":"application/json;;"`, "/datacontenttype"},
		{`"datacontenttype":"application/json; a=b c"`, "/datacontenttype"}, {`"datacontenttype":"application/json ; x"`, "/datacontenttype"},
		{`"subject":"a\nb"`, "/subject"}, {`"myext":"a\u0001b"`, "/myext"}, {`"myext":"a\u0085b"`, "/myext"},
		{`"correlationid":"c\u007f"`, "/correlationid"}, {`"causationid":"\t"`, "/causationid"}, {`"dataschema":"urn:x\u0085y"`, "/dataschema"},
	}, `"time":"2024-07-01T00:00:01Z"`, `"time":"2024-07-01T00:00:01.5+02:00"`,
		`"datacontenttype":"application/json; charset=utf-8"`, `"datacontenttype":"Application/JSON"`, `"datacontenttype":"application/json;charset=\"utf-8\""`,
		`"subject":"a b ü ✓"`, `"myext":"\u00a0ok"`)
	// the id is checked too, but an id with a control character is no id
	// of checkProducerOnly's event: its own
	_, err := events.ParseProducerEvent([]byte(`{"specversion":"1.0","id":"b5\nx","source":"test","type":"memory.feedback.v1","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`))
	if ve := (*events.ValidationError)(nil); !errors.As(err, &ve) || ve.Pointer != "/id" {
		t.Errorf("an id with a newline: got %v, want a ValidationError at /id", err)
	}
}

// producerCase is a member added to checkProducerOnly's event and the
// pointer a producer path's refusal names.
type producerCase struct{ member, pointer string }

// checkProducerOnly checks that producer paths refuse an event with each
// of refused's members, naming its pointer, while the processors' parse
// takes it (a log written before a check replays as it did), and that
// producer paths accept an event with each of accepted's.
func checkProducerOnly(t *testing.T, refused []producerCase, accepted ...string) {
	t.Helper()
	event := func(member string) []byte {
		return []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","scope":"project:demo",` + member + `,"data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`)
	}
	for _, c := range refused {
		_, err := events.ParseProducerEvent(event(c.member))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer {
			t.Errorf("%s: got %v, want a ValidationError at %s", c.member, err, c.pointer)
		}
		if _, err := events.ParseEvent(event(c.member)); err != nil {
			t.Errorf("%s: the consumer's parse refused it: %v", c.member, err)
		}
	}
	for _, member := range accepted {
		if _, err := events.ParseProducerEvent(event(member)); err != nil {
			t.Errorf("%s: %v", member, err)
		}
	}
}

// CloudEvents 1.0 gives an extension attribute no type for a fraction, an
// exponent or a number beyond 32 bits (Integer is -2,147,483,648 to
// 2,147,483,647, written as its integer component in JSON), and a subject,
// when present, is a non-empty string. Producer paths refuse them naming
// the attribute (before, they were acknowledged: the official Go SDK then
// refused the event read back, or truncated 3.5 to 3, and an empty subject
// vanished); the processors' parse of what they consume still takes them,
// so a log written before replays as it did.
func TestExtensionIntegersAndEmptySubject(t *testing.T) {
	checkProducerOnly(t, []producerCase{
		{`"n":3.5`, "/n"}, {`"n":1e3`, "/n"}, {`"n":3000000000`, "/n"}, {`"n":-2147483649`, "/n"}, {`"n":7.0`, "/n"},
		{`"subject":""`, "/subject"},
	}, `"n":7`, `"n":-0`, `"n":2147483647`, `"n":-2147483648`, `"subject":"s"`, `"n":""`)
}

// A workflow.task.completed.v1 whose tool_id is no id (CheckID) is refused
// on producer paths naming /data/tool_id: its tool becomes a node of the
// tool graph, keyed by tool (before, "a,c", "a c" or "ツール" was
// acknowledged and then lost from the graph with the next call's edge, a
// log line the only trace: a walkthrough). Tool names of OpenAI's and
// MCP's shapes pass; the consumer's parse still takes the others, so a log
// written before replays (the toolgraph processor dead-letters them).
func TestToolNamesAreIDs(t *testing.T) {
	event := func(tool string) []byte {
		return []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"workflow.task.completed.v1","scope":"project:demo","data":{"workflow_id":"w","layer":0,"task_id":"t1","tool_id":` + strconv.Quote(tool) + `,"success":true}}`)
	}
	for _, tool := range []string{"a,c", "a c", "a;c", "ツール", "-lead", "a//b"} {
		_, err := events.ParseProducerEvent(event(tool))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/data/tool_id" || !strings.Contains(ve.Reason, "tool graph") {
			t.Errorf("tool_id %q: got %v, want a refusal at /data/tool_id", tool, err)
		}
		if _, err := events.ParseEvent(event(tool)); err != nil {
			t.Errorf("tool_id %q: the consumer's parse refused it: %v", tool, err)
		}
	}
	for _, tool := range []string{"get_user_details", "github.create_issue", "fs/read-file", "Search"} {
		if _, err := events.ParseProducerEvent(event(tool)); err != nil {
			t.Errorf("tool_id %q: %v", tool, err)
		}
	}
}

// A session naming one criterion id twice is refused on producer paths,
// naming the second (the evaluation reported two results and a gap that
// could be either: a walkthrough); the consumer's parse still takes it.
func TestCriterionIDsAreUnique(t *testing.T) {
	event := func(ids ...string) []byte {
		var cs []string
		for _, id := range ids {
			cs = append(cs, `{"id":`+strconv.Quote(id)+`,"description":"d","weight":1,"check":{"kind":"output_contains","text":"x"}}`)
		}
		return []byte(`{"specversion":"1.0","id":"e1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","data":{"original_task":"t","success_criteria":[` + strings.Join(cs, ",") + `]}}`)
	}
	_, err := events.ParseProducerEvent(event("c1", "c2", "c1"))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/data/success_criteria/2/id" || !strings.Contains(ve.Reason, "criterion 0") {
		t.Fatalf("c1 twice: %v, want a refusal at /data/success_criteria/2/id", err)
	}
	if _, err := events.ParseEvent(event("c1", "c1")); err != nil {
		t.Fatalf("the consumer's parse refused it: %v", err)
	}
	if _, err := events.ParseProducerEvent(event("c1", "c2")); err != nil {
		t.Fatal(err)
	}
}

// A Publish whose context had ended before the call sends nothing, and
// says so: the error wraps context.Canceled, not ErrNotAcknowledged
// ("outcome unknown", which it was, for records that never left: a
// Go-package walkthrough).
func TestPublishWithAnEndedContextSendsNothing(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := events.NewProducer(events.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env, err := events.New(events.MemoryFeedback, "test", "ended-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = p.Publish(ctx, env)
	var pe *events.ProduceError
	if !errors.Is(err, context.Canceled) || errors.Is(err, events.ErrNotAcknowledged) || !errors.As(err, &pe) || len(pe.Failed) != 1 || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("Publish with an ended context: %v; want context.Canceled, not ErrNotAcknowledged, the record in Failed", err)
	}
	// nothing reached the log: the first record written now is at offset 0
	rec, err := events.Record(&env)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceRecords(context.Background(), []*kgo.Record{rec}); err != nil || rec.Offset != 0 {
		t.Fatalf("the next write: %v at offset %d; want offset 0 (nothing written before)", err, rec.Offset)
	}
}
