package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// Idempotency keys written by earlier versions (offset + contentHashV1, or
// the offset alone) still tell a repeat from a conflicting duplicate, and
// the hash ignores the data's whitespace.
func TestSameContentAcrossLayouts(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	other := env
	other.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":true}`)
	spaced := env
	spaced.Data = []byte(" {\n \"memory_id\" : \"m1\", \"signal\":\"task_completion\",\"positive\":true}")
	sum := ContentHash(&env)
	v1 := append(binary.BigEndian.AppendUint64(nil, 7), contentHashV1(&env)...)
	for _, c := range []struct {
		name string
		prev []byte
		env  *events.Envelope
		want bool
	}{
		{"current, same", dedupValue(7, sum), &env, true},
		{"current, whitespace", dedupValue(7, sum), &spaced, true},
		{"current, other", dedupValue(7, sum), &other, false},
		{"v1, same", v1, &env, true},
		{"v1, other", v1, &other, false},
		{"offset only", binary.BigEndian.AppendUint64(nil, 7), &other, true},
	} {
		if got := sameContent(c.prev, c.env, ContentHash(c.env)); got != c.want {
			t.Errorf("%s: sameContent %v, want %v", c.name, got, c.want)
		}
	}
}

// A time-less event resent as a new record gets another time from its
// record: it is a duplicate, not a conflicting one.
func TestResentTimelessEventIsADuplicate(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	first, again := env, env
	first.Time, first.TimeFromLog = events.RecordTime(time.Unix(1800000000, 0)), true
	again.Time, again.TimeFromLog = events.RecordTime(time.Unix(1800000005, 0)), true
	if !sameContent(dedupValue(1, ContentHash(&first)), &again, ContentHash(&again)) {
		t.Fatal("a resend of a time-less event counts as a conflicting duplicate")
	}
	sent := again
	sent.TimeFromLog = false // the same time, but sent by the producer this time
	if sameContent(dedupValue(1, ContentHash(&first)), &sent, ContentHash(&sent)) {
		t.Fatal("an event that now carries a time it did not before is not told apart")
	}
}
