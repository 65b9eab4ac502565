package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// From dedup version 6 on the author member POST /v1/events sets from the
// caller's token does not count: one event sent through two tokens, or
// through `chronicle ingest` and then HTTP, was answered 202 the second
// time and then dead-lettered as a conflicting duplicate (found by a
// producer walkthrough).
func TestAuthorIsNotContent(t *testing.T) {
	at := time.Unix(1700000000, 0)
	mk := func(typ events.Type, data string) events.Envelope {
		env, err := events.New(typ, "producer", "e1", at, nil)
		if err != nil {
			t.Fatal(err)
		}
		env.Data = []byte(data)
		return env
	}
	bare := mk(events.MemoryFeedback, `{"memory_id":"m1","signal":"task_completion","positive":true}`)
	byA := mk(events.MemoryFeedback, `{"memory_id":"m1","signal":"task_completion","positive":true,"source":"token:a"}`)
	byB := mk(events.MemoryFeedback, `{"source":"token:b","memory_id":"m1","signal":"task_completion","positive":true}`)
	spaced := mk(events.MemoryFeedback, `{ "memory_id": "m1", "signal": "task_completion", "positive": true, "sourc\u0065": "token:c" }`)
	other := mk(events.MemoryFeedback, `{"memory_id":"m2","signal":"task_completion","positive":true,"source":"token:a"}`)
	minuteA := mk(events.MinuteRecorded, `{"actor":"a","source":"token:a"}`)
	minuteB := mk(events.MinuteRecorded, `{"actor":"a","source":"token:b"}`)
	for name, c := range map[string]struct {
		prev, env *events.Envelope
		want      bool
	}{
		"ingest, then HTTP":        {&bare, &byA, true},
		"HTTP, then ingest":        {&byA, &bare, true},
		"token a, then token b":    {&byA, &byB, true},
		"escaped and spaced":       {&byB, &spaced, true},
		"other data":               {&byA, &other, false},
		"a type without an author": {&minuteA, &minuteB, false},
	} {
		if got := sameContent(dedupValue(1, ContentHash(c.prev)), c.env, ContentHash(c.env)); got != c.want {
			t.Errorf("%s: sameContent %v, want %v", name, got, c.want)
		}
	}

	// a directory written before: a version-5 key of an event written
	// without author takes the HTTP resend as the same event; one written
	// with an author holds no trace of who, so another stays a conflict
	// until a replay rewrites the keys
	for _, v := range []byte{3, 4, 5} {
		key := func(e *events.Envelope) []byte {
			return append(append(binary.BigEndian.AppendUint64(nil, 1), v), contentHash(e, int(v))...)
		}
		for name, c := range map[string]struct {
			prev []byte
			env  *events.Envelope
			want bool
		}{
			"ingest, then HTTP":     {key(&bare), &byA, true},
			"the event itself":      {key(&byA), &byA, true},
			"token a, then token b": {key(&byA), &byB, false},
			"other data":            {key(&bare), &other, false},
		} {
			if got := sameContent(c.prev, c.env, ContentHash(c.env)); got != c.want {
				t.Errorf("a version-%d key, %s: sameContent %v, want %v", v, name, got, c.want)
			}
		}
	}
}
