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

// A resend with another time is a duplicate, not a conflicting one: a
// time-less event resent as a new record (another record time), an event
// resent with a new time (the CloudEvents Go SDK's default client stamps
// each send), or now with a time it did not carry. Idempotency keys of
// dedup version 2 hold the time the first copy sent: a time-less event
// resent with a time (a dead-letter redrive stamps one) is a duplicate
// there too, as a replay says; a resend with another sent time stays a
// conflict there (the first time is in the key only as its hash).
func TestResentWithAnotherTimeIsADuplicate(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	first, again := env, env
	first.Time, first.TimeFromLog = events.RecordTime(time.Unix(1800000000, 0)), true
	again.Time, again.TimeFromLog = events.RecordTime(time.Unix(1800000005, 0)), true
	sent := again
	sent.TimeFromLog = false // the same time, but sent by the producer this time
	restamped := env
	restamped.Time = events.RecordTime(time.Unix(1700000009, 0))
	other := env
	other.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":true}`)
	for _, c := range []struct {
		name         string
		prev         *events.Envelope
		env          *events.Envelope
		same, sameV2 bool
	}{
		{"time-less, resent", &first, &again, true, true},
		{"now with a time", &first, &sent, true, true},
		{"restamped", &env, &restamped, true, false},
		{"other data", &env, &other, false, false},
	} {
		if got := sameContent(dedupValue(1, ContentHash(c.prev)), c.env, ContentHash(c.env)); got != c.same {
			t.Errorf("%s: sameContent %v, want %v", c.name, got, c.same)
		}
		v2 := append(append(binary.BigEndian.AppendUint64(nil, 1), 2), contentHashV2(c.prev)...)
		if got := sameContent(v2, c.env, ContentHash(c.env)); got != c.sameV2 {
			t.Errorf("%s, a version-2 key: sameContent %v, want %v", c.name, got, c.sameV2)
		}
		v3 := append(append(binary.BigEndian.AppendUint64(nil, 1), 3), contentHashV3(c.prev)...)
		if got := sameContent(v3, c.env, ContentHash(c.env)); got != c.same {
			t.Errorf("%s, a version-3 key: sameContent %v, want %v", c.name, got, c.same)
		}
	}
}

// The scope counts as the effective scope from dedup version 4 on (no
// scope is org:default's), and a version-3 key is read by that rule too.
func TestSpelledOutDefaultScopeIsTheSameContent(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	spelled := env
	spelled.Scope = events.DefaultScope
	other := env
	other.Scope = "project:a"
	if !sameContent(dedupValue(1, ContentHash(&env)), &spelled, ContentHash(&spelled)) {
		t.Error("org:default spelled out is other content than no scope")
	}
	if sameContent(dedupValue(1, ContentHash(&env)), &other, ContentHash(&other)) {
		t.Error("project:a is the same content as no scope")
	}
	// a version-3 key answers the same for the scope (a store upgraded
	// across version 4 decides as a replay does), from the hash of either
	// spelling
	v3 := append(append(binary.BigEndian.AppendUint64(nil, 1), 3), contentHashV3(&env)...)
	v3spelled := append(append(binary.BigEndian.AppendUint64(nil, 1), 3), contentHashV3(&spelled)...)
	for name, c := range map[string]struct {
		prev []byte
		env  *events.Envelope
		want bool
	}{
		"left out, then spelled out": {v3, &spelled, true},
		"spelled out, then left out": {v3spelled, &env, true},
		"the event itself":           {v3, &env, true},
		"another scope":              {v3, &other, false},
	} {
		if got := sameContent(c.prev, c.env, ContentHash(c.env)); got != c.want {
			t.Errorf("a version-3 key, %s: sameContent %v, want %v", name, got, c.want)
		}
	}
}

// From dedup version 4 on the data counts in its canonical form: a resend
// whose encoder escapes strings otherwise (Python's json.dumps writes "’"
// as "\u2019") is the same event; other data is not. A version-3 key keeps
// its rule (found by an upgrade walkthrough re-sending a session through
// Python).
func TestReencodedDataIsTheSameContent(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true, Comment: "it’s fine\n\"ok\""})
	if err != nil {
		t.Fatal(err)
	}
	reencoded := env
	reencoded.Data = []byte(`{"memory_id": "m1", "signal": "task_completion", "positive": true, "comment": "it\u2019s fine\u000a\u0022ok\u0022"}`)
	other := env
	other.Data = []byte(`{"memory_id":"m1","signal":"task_completion","positive":true,"comment":"it\u2019s fine!"}`)
	if !sameContent(dedupValue(1, ContentHash(&env)), &reencoded, ContentHash(&reencoded)) {
		t.Error("the same data encoded with other escapes is other content")
	}
	if sameContent(dedupValue(1, ContentHash(&env)), &other, ContentHash(&other)) {
		t.Error("other data is the same content")
	}
	v3 := append(append(binary.BigEndian.AppendUint64(nil, 1), 3), contentHashV3(&env)...)
	if sameContent(v3, &reencoded, ContentHash(&reencoded)) {
		t.Error("a version-3 key: other escapes are the same content")
	}
}

// uOrSlashEscape finds a \u or \/ escape, and no other: an escaped
// backslash followed by a 'u' or '/' is text.
func TestUOrSlashEscape(t *testing.T) {
	for s, want := range map[string]bool{
		`{"a":"x"}`:            false,
		`{"a":"\"quoted\"\n"}`: false,
		`{"a":"\u2019"}`:       true,
		`{"a":"a\/b"}`:         true,
		`{"a":"C:\\users"}`:    false,
		`{"a":"C:\\\u0041"}`:   true,
		`{"a":"\\/"}`:          false,
		`{"a":"end\\"}`:        false,
	} {
		if got := uOrSlashEscape([]byte(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}

// From dedup version 5 on the datacontenttype does not count: every value
// accepted says JSON, and HTTP binary mode writes application/json while a
// structured event usually leaves it out, so a retry in the other mode was
// dead-lettered as a conflicting duplicate (found by a producer
// walkthrough). A version-4 key answers the same for the two usual
// spellings, from the hash of either.
func TestDataContentTypeIsNotContent(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	binaryMode := env // events.New and binary mode: application/json
	structured := env
	structured.DataContentType = ""
	charset := env
	charset.DataContentType = "application/json; charset=utf-8"
	other := structured
	other.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":true}`)
	for name, c := range map[string]struct {
		prev, env *events.Envelope
		want      bool
	}{
		"binary, then structured": {&binaryMode, &structured, true},
		"structured, then binary": {&structured, &binaryMode, true},
		"with a charset":          {&structured, &charset, true},
		"other data":              {&binaryMode, &other, false},
	} {
		if got := sameContent(dedupValue(1, ContentHash(c.prev)), c.env, ContentHash(c.env)); got != c.want {
			t.Errorf("%s: sameContent %v, want %v", name, got, c.want)
		}
	}
	v4 := func(e *events.Envelope) []byte {
		return append(append(binary.BigEndian.AppendUint64(nil, 1), 4), contentHashV4(e)...)
	}
	for name, c := range map[string]struct {
		prev []byte
		env  *events.Envelope
		want bool
	}{
		"binary, then structured": {v4(&binaryMode), &structured, true},
		"structured, then binary": {v4(&structured), &binaryMode, true},
		"the event itself":        {v4(&charset), &charset, true},
		"other data":              {v4(&binaryMode), &other, false},
	} {
		if got := sameContent(c.prev, c.env, ContentHash(c.env)); got != c.want {
			t.Errorf("a version-4 key, %s: sameContent %v, want %v", name, got, c.want)
		}
	}
}
