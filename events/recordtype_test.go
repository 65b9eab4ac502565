package events

import (
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
