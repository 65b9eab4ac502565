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
