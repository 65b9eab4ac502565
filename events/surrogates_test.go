package events_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A lone UTF-16 surrogate escape is refused naming its member: decoders
// turn it into U+FFFD, so "sur\ud800x" and "sur\udbffx" were one id (the
// second event answered 202 and was then dead-lettered as a conflicting
// duplicate: a producer's walkthrough). A surrogate pair, U+FFFD itself
// and an escaped backslash before "ud800" are text like any other.
func TestLoneSurrogatesAreRefused(t *testing.T) {
	event := func(id, note string) []byte {
		return []byte(`{"specversion":"1.0","id":"` + id + `","source":"a/sur","type":"coordination.minute.recorded.v1","sessionid":"s1","scope":"project:a","data":{"event_type":"m","actor":"a","data":{},"memory_note":"` + note + `"}}`)
	}
	for _, c := range []struct {
		id, note, pointer string
	}{
		{`sur\ud800x`, "n", "/id"},
		{`sur\udbff`, "n", "/id"},
		{`sur\udc00x`, "n", "/id"},
		{`sur\ud800\u0041`, "n", "/id"},
		{"ok", `a\uDBFF`, "/data/memory_note"},
		{"ok", `a\ud83d\ude00 \udc00`, "/data/memory_note"},
	} {
		_, err := events.ParseProducerEvent(event(c.id, c.note))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, "lone UTF-16 surrogate") {
			t.Errorf("id %s, note %s: %v; want a refusal naming %s", c.id, c.note, err, c.pointer)
		}
	}
	// in a member name: the object holding the member is named (its own
	// pointer would hold U+FFFD), with the member's name left out
	for _, c := range []struct{ body, pointer string }{
		{`{"a":1,"x\ud800y" :2}`, "/"},
		{`{"data":{"ok":1,"n\udc00":{"deep":1}}}`, "/data"},
		{`{"data":[{"k\\\"\udbff":1}]}`, "/data/0"},
		{`{"data":{"v":"not a name \ud800"}}`, "/data/v"},
	} {
		ptr, reason, ok := events.LoneSurrogate([]byte(c.body))
		if !ok || ptr != c.pointer || strings.ContainsRune(ptr, '\uFFFD') {
			t.Errorf("%s: %q %q %v; want the pointer %s", c.body, ptr, reason, ok, c.pointer)
		}
		if name := strings.Contains(reason, "of a member name"); name != (c.pointer != "/data/v") {
			t.Errorf("%s: reason %q; says a member name: %v", c.body, reason, name)
		}
	}
	// an unknown member whose name holds one: the surrogate is named, not
	// "additional properties 'x�' not allowed" (a re-test: the schema's
	// error came first on the producer path)
	for _, raw := range []string{
		`{"specversion":"1.0","id":"s1","source":"qa","type":"coordination.session.started.v1","scope":"project:a","sessionid":"s1","data":{"original_task":"t","success_criteria":[],"x\ud800":1}}`,
		`{"specversion":"1.0","id":"s1","source":"qa","type":"coordination.session.started.v1","scope":"project:a","sessionid":"s1","x\ud800":"attr","data":{"original_task":"t","success_criteria":[]}}`,
	} {
		_, err := events.ParseProducerEvent([]byte(raw))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "of a member name is a lone UTF-16 surrogate") || strings.ContainsRune(err.Error(), '\uFFFD') {
			t.Errorf("%s: %v; want the surrogate in a member name named", raw, err)
		}
	}
	for _, c := range []struct{ id, note string }{
		{`smile\ud83d\ude00`, `\uD83D\uDE00`},
		{`x\ufffd`, "\uFFFD"},
		{`back\\ud800slash`, `\\udc00`},
	} {
		if _, err := events.ParseProducerEvent(event(c.id, c.note)); err != nil {
			t.Errorf("id %s, note %s: %v; want it accepted", c.id, c.note, err)
		}
	}
}

// Producer.Publish refuses what HTTP refuses: invalid UTF-8 in an
// attribute or in data, naming it. Its encoding replaced each bad byte
// with U+FFFD, so the log held other content than the producer's, and two
// ids differing there were one (a producer's walkthrough).
func TestPublishRefusesInvalidUTF8(t *testing.T) {
	minute := func(id, note string) events.Envelope {
		env, err := events.New(events.MinuteRecorded, "a/utf8", id, time.Unix(1700000000, 0), events.MinuteData{EventType: "m", Actor: "a", Data: []byte(`{}`), MemoryNote: note})
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "s1", "project:a"
		return env
	}
	// a payload's string: New says so (encoding it replaced the bytes)
	if _, err := events.New(events.MinuteRecorded, "a/utf8", "x", time.Unix(1700000000, 0), events.MinuteData{EventType: "m", Actor: "a", Data: []byte(`{}`), MemoryNote: "bad\xff"}); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("New with an invalid string: %v, want a refusal", err)
	}
	raw := func(id string, data string) events.Envelope {
		env, err := events.New(events.MinuteRecorded, "a/utf8", id, time.Unix(1700000000, 0), map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		env.Data = []byte(data)
		env.SessionID, env.Scope = "s1", "project:a"
		return env
	}
	for _, c := range []struct {
		env     events.Envelope
		pointer string
	}{
		{minute("inv\xff", "n"), "/id"},
		{raw("ok", `{"event_type":"m","actor":"a","data":{},"memory_note":"bad`+"\xff"+`"}`), "/data/memory_note"},
	} {
		var ch events.Checker
		_, err := ch.Check(&c.env)
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, "not valid UTF-8") {
			t.Errorf("%q / %s: %v; want a refusal naming %s", c.env.ID, c.env.Data, err, c.pointer)
		}
	}
	var ch events.Checker
	ok := minute("ok", "fine ✓")
	if _, err := ch.Check(&ok); err != nil {
		t.Errorf("valid UTF-8: %v", err)
	}
}

// A producer's raw event (POST /v1/events, a batch, binary mode) with a
// byte that is not UTF-8 is refused naming the member that holds it and
// the byte's offset, as every other route's body; it was "/: not valid
// UTF-8" (a subscriber's walkthrough, 2026-12-03). A byte between values
// is named at "/".
func TestProducerEventInvalidUTF8NamesTheMember(t *testing.T) {
	head := `{"specversion":"1.0","id":"tg6","source":"urn:x","type":"coordination.minute.recorded.v1","sessionid":"x","data":{"event_type":"a`
	raw := head + "\xff" + `","actor":"b","data":{}}}`
	_, err := events.ParseProducerEvent([]byte(raw))
	var ve *events.ValidationError
	want := fmt.Sprintf("not valid UTF-8 at byte %d", len(head))
	if !errors.As(err, &ve) || ve.Pointer != "/data/event_type" || !strings.HasPrefix(ve.Reason, want) {
		t.Fatalf("%v; want a refusal at /data/event_type, %q", err, want)
	}
	_, err = events.ParseProducerEvent([]byte("\xff" + raw))
	if !errors.As(err, &ve) || ve.Pointer != "/" || !strings.HasPrefix(ve.Reason, "not valid UTF-8 at byte 0") {
		t.Fatalf("a leading bad byte: %v; want a refusal at /, byte 0", err)
	}
}
