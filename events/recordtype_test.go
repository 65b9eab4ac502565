package events

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordType(t *testing.T) {
	h := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	for _, c := range []struct {
		name string
		rec  kgo.Record
		want Type
		ok   bool
	}{
		{"structured", kgo.Record{Value: []byte(`{"specversion":"1.0","type":"search.resumed.v1","data":{"type":"x"}}`), Headers: h("content-type", ContentTypeCloudEvents)}, SearchResumed, true},
		{"binary", kgo.Record{Value: []byte(`{"type":"not this"}`), Headers: h("ce_id", "1", "CE_TYPE", "memory.feedback.v1")}, MemoryFeedback, true},
		{"binary, ce_type repeated: the last, as FromRecord", kgo.Record{Value: []byte(`{}`), Headers: h("ce_type", "workflow.task.completed.v1", "ce_id", "1", "Ce_Type", "memory.feedback.v1")}, MemoryFeedback, true},
		{"binary without ce_type", kgo.Record{Value: []byte(`{"type":"not this"}`), Headers: h("ce_id", "1")}, "", false},
		// the CloudEvents media type is structured mode whatever ce_*
		// headers ride along (Kafka binding §3.1; a walkthrough)
		{"structured with a ce_ header", kgo.Record{Value: []byte(`{"specversion":"1.0","type":"search.resumed.v1","data":{}}`), Headers: h("ce_traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "Content-Type", "Application/CloudEvents+JSON")}, SearchResumed, true},
		{"no type member", kgo.Record{Value: []byte(`{"id":"1"}`)}, "", false},
		{"type not a string", kgo.Record{Value: []byte(`{"type":1}`)}, "", false},
		{"not JSON", kgo.Record{Value: []byte(`type`)}, "", false},
	} {
		got, ok := RecordType(&c.rec)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A structured-mode record (content-type application/cloudevents+json)
// that carries ce_* headers too is read as structured, as the Kafka
// protocol binding says (§3.1): its ce_ headers are not its attributes.
// It was read as binary mode, its value taken for the data, and
// dead-lettered ("missing properties 'specversion', 'id', …": a raw-Kafka
// walkthrough, 2026-11-30).
func TestStructuredModeWithCEHeaders(t *testing.T) {
	value := []byte(`{"specversion":"1.0","id":"s4-st","source":"probe/raw","type":"coordination.session.started.v1","sessionid":"s4","data":{"original_task":"t","success_criteria":[]}}`)
	for _, hs := range [][]kgo.RecordHeader{
		{{Key: "content-type", Value: []byte(ContentTypeCloudEvents)}, {Key: "ce_traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}},
		{{Key: "ce_id", Value: []byte("s6-n9")}, {Key: "Content-Type", Value: []byte("application/cloudevents+json; charset=utf-8")}},
	} {
		env, err := FromRecord(&kgo.Record{Topic: string(TopicSessions), Value: value, Headers: hs})
		if err != nil || env.ID != "s4-st" || env.Type != SessionStarted || env.SessionID != "s4" {
			t.Errorf("headers %v: %+v %v; want the structured event", hs, env, err)
		}
	}
}

// A Kafka record may not carry the JSON Batch Format: the Kafka binding
// has binary and structured modes only (§1.3), and a record holds one
// event keyed by its entity. Its refusal names the content-type header
// and says what to do; before, it said "an event must be a JSON object"
// (an array) or, with ce_ headers, "missing properties 'specversion',
// 'id', …", which named neither (a letter the old list kept open).
func TestBatchContentTypeOnARecordIsRefusedSayingSo(t *testing.T) {
	batch := []byte(`[{"specversion":"1.0","id":"b1","source":"js","type":"memory.feedback.v1","data":{"memory_id":"m1","signal":"task_completion","positive":false}}]`)
	for _, ct := range []string{ContentTypeBatch, "Application/CloudEvents-Batch+JSON; charset=utf-8"} {
		_, err := FromRecord(&kgo.Record{Topic: string(TopicMemories), Value: batch, Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte(ct)}}})
		ve, ok := err.(*ValidationError)
		if !ok || ve.Pointer != "/" || !strings.Contains(ve.Reason, "no batched mode") || !strings.Contains(ve.Reason, ct) {
			t.Errorf("content-type %q: %v; want a refusal at / naming the header and the binding's modes", ct, err)
		}
	}
}

// A record whose content-type says structured mode (the CloudEvents media
// type) while its attributes are ce_ headers and its value is the data —
// a producer that meant binary mode — is refused with the reason saying
// how it was read and which content-type binary mode takes. A structured
// event refused for a member, beside a ce_traceparent extension header,
// gets no such hint: its value was read as the event it is.
func TestStructuredRecordWithBinaryAttributesSaysHowItWasRead(t *testing.T) {
	attrs := []kgo.RecordHeader{{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b7")},
		{Key: "ce_source", Value: []byte("py")}, {Key: "ce_type", Value: []byte("memory.feedback.v1")}}
	for _, ct := range []string{ContentTypeCloudEvents, ContentTypeBatch} {
		hs := append([]kgo.RecordHeader{{Key: "content-type", Value: []byte(ct)}}, attrs...)
		_, err := FromRecord(&kgo.Record{Topic: string(TopicMemories), Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`), Headers: hs})
		if err == nil || !strings.Contains(err.Error(), "no batched mode") && !strings.Contains(err.Error(), "send content-type application/json") {
			t.Errorf("content-type %q with ce_ attributes: %v; want the reason to say how the record was read", ct, err)
		}
	}
	// binary mode proper: the same headers with content-type application/json parse
	hs := append([]kgo.RecordHeader{{Key: "content-type", Value: []byte(ContentTypeJSON)}}, attrs...)
	if _, err := FromRecord(&kgo.Record{Topic: string(TopicMemories), Key: []byte("org:default/m1"), Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`), Headers: hs}); err != nil {
		t.Fatalf("binary mode: %v", err)
	}
	structured := []byte(`{"specversion":"1.0","id":"s4-st","source":"probe/raw","type":"coordination.session.started.v1","sessionid":"s4","data":{"original_task":"t","success_criteria":"none"}}`)
	_, err := FromRecord(&kgo.Record{Topic: string(TopicSessions), Value: structured, Headers: []kgo.RecordHeader{
		{Key: "content-type", Value: []byte(ContentTypeCloudEvents)}, {Key: "ce_traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}}})
	if err == nil || strings.Contains(err.Error(), "structured mode") {
		t.Errorf("a structured event with a bad member: %v; want its member's refusal without the hint", err)
	}
}

// A record without a value — a tombstone, which kafkajs writes for
// value: null and which a producer may send meaning to delete an entity —
// is refused saying so, in either mode. Before, its letter said
// "/: not valid JSON: EOF" (structured) or "binary-mode value is not
// valid JSON", which named neither the null value nor that Chronicle's
// topics are not compacted (a kafkajs producer's walkthrough, 2026-12-04).
func TestTombstoneIsRefusedSayingSo(t *testing.T) {
	binary := []kgo.RecordHeader{{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("t1")},
		{Key: "ce_source", Value: []byte("js")}, {Key: "ce_type", Value: []byte(SessionStarted)}, {Key: "ce_sessionid", Value: []byte("s1")},
		{Key: "content-type", Value: []byte(ContentTypeJSON)}}
	for _, c := range []struct {
		name    string
		headers []kgo.RecordHeader
		pointer string
	}{
		{"no headers", nil, "/"},
		{"structured", []kgo.RecordHeader{{Key: "content-type", Value: []byte(ContentTypeCloudEvents)}}, "/"},
		{"binary", binary, "/data"},
	} {
		for _, value := range [][]byte{nil, {}} {
			_, err := FromRecord(&kgo.Record{Topic: string(TopicSessions), Key: []byte("org:default/s1"), Value: value, Headers: c.headers})
			ve, ok := err.(*ValidationError)
			if !ok || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, "tombstone") || !strings.Contains(ve.Reason, "not compacted") {
				t.Errorf("%s, value %q: %v; want a refusal at %s saying the record has no value (a tombstone) and the topics are not compacted", c.name, value, err, c.pointer)
			}
		}
	}
}

// A record whose attributes ride as ce-id, ce-type, … — the HTTP
// binding's header names, where the Kafka binding's are ce_id, ce_type
// (§3.2.3) — is read as structured, its value the data, and its refusal
// says that the headers were the HTTP binding's and names the Kafka
// binding's prefix. Before, it said only "missing properties
// 'specversion', 'id', …", which the producer had sent, as headers (a
// kafkajs producer's walkthrough, 2026-12-04).
func TestHTTPBindingHeadersOnARecordSaySo(t *testing.T) {
	value := []byte(`{"original_task":"t","success_criteria":[]}`)
	for _, hs := range [][]kgo.RecordHeader{
		{{Key: "ce-specversion", Value: []byte("1.0")}, {Key: "ce-id", Value: []byte("d1")}, {Key: "ce-source", Value: []byte("js")},
			{Key: "ce-type", Value: []byte(SessionStarted)}, {Key: "ce-sessionid", Value: []byte("s1")}, {Key: "content-type", Value: []byte(ContentTypeJSON)}},
		{{Key: "CE-ID", Value: []byte("d1")}, {Key: "ce-type", Value: []byte(SessionStarted)}},
		{{Key: "ce-id", Value: []byte("d1")}, {Key: "content-type", Value: []byte(ContentTypeCloudEvents)}},
	} {
		_, err := FromRecord(&kgo.Record{Topic: string(TopicSessions), Key: []byte("org:default/s1"), Value: value, Headers: hs})
		ve, ok := err.(*ValidationError)
		if !ok || ve.Pointer != "/" || !strings.Contains(ve.Reason, "missing properties") || !strings.Contains(ve.Reason, "HTTP binding") || !strings.Contains(ve.Reason, "ce_id") {
			t.Errorf("headers %v: %v; want the missing properties and that ce- headers are the HTTP binding's, the Kafka binding's being ce_id, …", hs, err)
		}
	}
	// a structured event beside a ce-traceparent header is read as the event it is
	env, err := FromRecord(&kgo.Record{Topic: string(TopicSessions), Key: []byte("org:default/s4"), Value: []byte(`{"specversion":"1.0","id":"s4-st","source":"js","type":"coordination.session.started.v1","sessionid":"s4","data":{"original_task":"t","success_criteria":[]}}`),
		Headers: []kgo.RecordHeader{{Key: "ce-traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}}})
	if err != nil || env.ID != "s4-st" {
		t.Errorf("a structured event with a ce-traceparent header: %+v %v", env, err)
	}
}

// A record on the wrong partition without a key says it has none: it
// said (record key ""), which read as an empty key sent on purpose.
func TestPartitionErrorWithoutARecordKeySaysSo(t *testing.T) {
	e := &PartitionError{Topic: "chronicle.sessions", Partition: 2, Want: 0, Key: "project:a/s1"}
	if msg := e.Error(); !strings.Contains(msg, "the record has no key, or an empty one") || strings.Contains(msg, `record key ""`) {
		t.Fatalf("%s; want it to say the record has no key", msg)
	}
	e.RecordKey = "s1"
	if msg := e.Error(); !strings.Contains(msg, `(record key "s1")`) {
		t.Fatalf("%s; want the record's key named", msg)
	}
}
