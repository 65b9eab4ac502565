package deadletter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stampTime gives a time-less event its original record's time, in the
// record's own content mode, and leaves an event with a time alone.
func TestStampTime(t *testing.T) {
	ts := time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC)
	at := events.RecordTime(ts)
	structured := `{"specversion":"1.0","id":"e1","source":"s","type":"memory.feedback.v1","data":{}}`
	timed := `{"specversion":"1.0","id":"e1","source":"s","type":"memory.feedback.v1","time":"2026-01-01T00:00:00Z","data":{}}`
	for _, c := range []struct {
		name      string
		rec       kgo.Record
		wantTime  string // the event's time after the stamp
		wantValue string // "": unchanged
	}{
		{"structured, no time", kgo.Record{Value: []byte(structured)}, at, ""},
		{"structured, a time", kgo.Record{Value: []byte(timed)}, "2026-01-01T00:00:00Z", timed},
		{"binary, no ce_time", kgo.Record{Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("e1")}, {Key: "ce_source", Value: []byte("s")},
			{Key: "ce_type", Value: []byte("memory.feedback.v1")}}}, at, `{}`},
		{"binary, a CE_TIME", kgo.Record{Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("e1")}, {Key: "ce_source", Value: []byte("s")},
			{Key: "ce_type", Value: []byte("memory.feedback.v1")}, {Key: "CE_TIME", Value: []byte("2026-01-01T00:00:00Z")}}}, "2026-01-01T00:00:00Z", `{}`},
	} {
		rec := c.rec
		stampTime(&rec, ts)
		if c.wantValue != "" && string(rec.Value) != c.wantValue {
			t.Errorf("%s: value %s, want %s unchanged", c.name, rec.Value, c.wantValue)
		}
		// read back with another timestamp: the time must come from the event
		rec.Timestamp = ts.Add(time.Hour)
		raw, err := events.StructuredJSON(&rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var probe struct {
			Time string `json:"time"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil || probe.Time != c.wantTime {
			t.Errorf("%s: time %q (%v), want %q", c.name, probe.Time, err, c.wantTime)
		}
	}
}
