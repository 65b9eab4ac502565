package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

func TestAppendWithoutMember(t *testing.T) {
	for _, c := range []struct {
		in, name, want string
		dropped        bool
	}{
		{`{"memory_id":"m1","source":"token:a"}`, "source", `{"memory_id":"m1"}`, true},
		{`{"source":"token:a","memory_id":"m1"}`, "source", `{"memory_id":"m1"}`, true},
		{`{"a":1,"source":"x","b":[1,{"source":"y"}]}`, "source", `{"a":1,"b":[1,{"source":"y"}]}`, true},
		{`{"source":"x"}`, "source", `{}`, true},
		{`{"source":"x","source":"y","z":null}`, "source", `{"z":null}`, true},
		{`{"a":{"source":"nested"}}`, "source", `{"a":{"source":"nested"}}`, false},
		{`{"a":"\"source\":","b":true}`, "source", `{"a":"\"source\":","b":true}`, false},
		{`{"a":"}\\","source":{"k":"]"},"b":-1.5e3}`, "source", `{"a":"}\\","b":-1.5e3}`, true},
		{`{"sources":"x"}`, "source", `{"sources":"x"}`, false},
		{`{}`, "source", `{}`, false},
		{`null`, "source", `null`, false},
		{`["source",1]`, "source", `["source",1]`, false},
		{`{"source":"unterminated`, "source", `{"source":"unterminated`, false},
		{`{"recorded_by":"token:a","content":"c"}`, "recorded_by", `{"content":"c"}`, true},
	} {
		got, dropped := appendWithoutMember([]byte("pre"), []byte(c.in), c.name)
		if string(got) != "pre"+c.want || dropped != c.dropped {
			t.Errorf("%s without %q: %s (dropped %v), want %s (%v)", c.in, c.name, got[3:], dropped, c.want, c.dropped)
		}
	}
}

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
