package events_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

func TestEntityKey(t *testing.T) {
	for _, c := range []struct{ scope, id, key string }{
		{"project:a", "sa-2", "project:a/sa-2"},
		{"", "sa-2", "org:default/sa-2"},
		{"team:x", "taubench-airline/5/2", "team:x/taubench-airline/5/2"},
	} {
		k := events.EntityKey(c.scope, c.id)
		if k != c.key {
			t.Errorf("EntityKey(%q, %q) = %q, want %q", c.scope, c.id, k, c.key)
		}
		s, id, ok := events.SplitEntityKey(k)
		wantScope := c.scope
		if wantScope == "" {
			wantScope = events.DefaultScope
		}
		if !ok || s != wantScope || id != c.id {
			t.Errorf("SplitEntityKey(%q) = %q, %q, %v", k, s, id, ok)
		}
	}
	for _, bad := range []string{"", "noslash", "/id", "project:a/"} {
		if _, _, ok := events.SplitEntityKey(bad); ok {
			t.Errorf("SplitEntityKey(%q) ok, want not ok", bad)
		}
	}
}

// An id may hold letters, digits and the punctuation "._~:@+=-/" (not
// first, not "//", not last '/'): every byte value, in the middle of an id.
func TestCheckIDBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._~:@+=-/", b) >= 0
		if err := events.CheckID("a" + string([]byte{b}) + "z"); (err == nil) != want {
			t.Errorf("CheckID with byte %q: %v, want accepted %v", b, err, want)
		}
	}
}

// DerivedID is the hex of the first 16 bytes of the SHA-256 of
// "source\x00id\x00type\x00n", as it was first written with fmt: ids in
// stored rows and in the log depend on it.
func TestDerivedIDAsFormatted(t *testing.T) {
	for _, c := range []struct {
		src, id string
		typ     events.Type
		n       int
	}{
		{"chronicle/sessions", "evt-1", events.EvaluationCompleted, 0},
		{"", "", "", 12},
		{"src é", "id\x00x", events.MemoryRecorded, -3},
		{"a", "b", events.PatternCounted, 1234567},
	} {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", c.src, c.id, c.typ, c.n))
		if got, want := events.DerivedID(c.src, c.id, c.typ, c.n), fmt.Sprintf("%x", h[:16]); got != want {
			t.Errorf("DerivedID(%q, %q, %q, %d) = %s, want %s", c.src, c.id, c.typ, c.n, got, want)
		}
	}
}

// A character outside the id alphabet is named as the character, not as
// the first byte of its UTF-8 encoding ('é' read 'Ã': found by a new
// user's walkthrough).
func TestCheckIDNamesTheCharacter(t *testing.T) {
	err := events.CheckID("café")
	if err == nil || !strings.Contains(err.Error(), `'é' at byte 3`) {
		t.Fatalf("CheckID(café): %v; want it to name 'é' at byte 3", err)
	}
	// the first character too, and that the rule is ASCII: "タスク" was
	// told to start with a letter
	err = events.CheckID("タスク")
	if err == nil || err.Error() != `must start with an ASCII letter or digit, not 'タ'` {
		t.Fatalf("CheckID(タスク): %v; want it to name 'タ' and say ASCII", err)
	}
}

// Two scopes' events with one source and id (two events: the processors key
// them by scope, source and id) cause derived events whose source and id
// differ, as CloudEvents requires of distinct events; before, Derive gave
// both DerivedID of the cause's source and id, and a subscriber that
// deduplicates by source and id dropped one tenant's event as the other's
// duplicate. An event without a scope, or of the default scope, keeps the
// id it always had.
func TestDerivedIDsDifferAcrossScopes(t *testing.T) {
	cause := func(scope string) *events.Envelope {
		return &events.Envelope{SpecVersion: "1.0", ID: "e-1", Source: "agent", Type: events.MemoryFeedback, Scope: scope, Time: "2026-11-29T00:00:00Z"}
	}
	derive := func(scope string) events.Envelope {
		env, err := events.Derive(cause(scope), "chronicle/sessions", events.EvaluationCompleted, 0, map[string]any{"session_id": "s"}) // validated where it is read
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	a, b := derive("project:a"), derive("project:b")
	if a.Source == b.Source && a.ID == b.ID {
		t.Fatalf("project:a and project:b derived one source and id: %s %s", a.Source, a.ID)
	}
	old := events.DerivedID("agent", "e-1", events.EvaluationCompleted, 0)
	for _, sc := range []string{"", events.DefaultScope} {
		if got := derive(sc).ID; got != old {
			t.Errorf("scope %q: derived id %s, want the unscoped %s", sc, got, old)
		}
	}
	h := sha256.Sum256([]byte("agent\x00e-1\x00" + string(events.EvaluationCompleted) + "\x000\x00project:a"))
	if want := fmt.Sprintf("%x", h[:16]); a.ID != want || events.DerivedIDIn("project:a", "agent", "e-1", events.EvaluationCompleted, 0) != want {
		t.Errorf("project:a: derived id %s, want %s", a.ID, want)
	}
}

// A reasoning pass with neither data task_id nor the sessionid attribute
// is refused at /data/task_id with a reason that names both ways to key
// it; it said "required as record key", and a producer that meant to send
// sessionid did not learn that it would do (a passes walkthrough).
func TestRecordKeyReasonNamesSessionID(t *testing.T) {
	env := events.Envelope{SpecVersion: "1.0", ID: "p1", Source: "agent", Type: events.ReasoningPassCompleted, Data: []byte(`{"pass":1}`)}
	_, err := events.Key(&env)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/data/task_id" || !strings.Contains(ve.Reason, "sessionid") {
		t.Fatalf("Key: %v, want a ValidationError at /data/task_id naming sessionid", err)
	}
	env.SessionID = "s-1"
	if k, err := events.Key(&env); err != nil || k != events.EntityKey(events.DefaultScope, "s-1") {
		t.Fatalf("with sessionid: %q %v", k, err)
	}
}

// A memory.created.v1 of a recording merged into memory m is keyed by m
// (merged_into), so it sits on m's partition of chronicle.learned with m's
// other learned events; a recording that created its memory is keyed by
// its own memory_id. Before, a merge was keyed by the recording's id: with
// several partitions one memory's learned events were spread over them (a
// subscriber walkthrough, 2026-12-03).
func TestMergedMemoryCreatedIsKeyedByTheMemory(t *testing.T) {
	for _, c := range []struct {
		data events.MemoryCreatedData
		key  string
	}{
		{events.MemoryCreatedData{MemoryID: "x-2", MergedInto: "x-1"}, "project:a/x-1"},
		{events.MemoryCreatedData{MemoryID: "x-1"}, "project:a/x-1"},
	} {
		c.data.Title, c.data.Description, c.data.Outcome, c.data.Source, c.data.Confidence, c.data.Evidence, c.data.RecordedEventID = "t", "d", "success", "explicit", 0.8, 1, "r-1"
		env, err := events.New(events.MemoryCreated, "chronicle/memories", "c-1", time.Unix(0, 0), c.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		for name, key := range map[string]func(*events.Envelope) (string, error){"Key": events.Key, "record": func(e *events.Envelope) (string, error) {
			_, k, err := events.RecordTopic(e)
			return k, err
		}} {
			if k, err := key(&env); err != nil || k != c.key {
				t.Errorf("%s of %+v: %q %v, want %q", name, c.data, k, err, c.key)
			}
		}
		rec, err := events.Record(&env)
		if err != nil {
			t.Fatal(err)
		}
		parsed, key, err := events.FromRecordKey(rec)
		if err != nil || key != c.key || parsed.ID != "c-1" {
			t.Errorf("FromRecordKey of %+v: %q %v", c.data, key, err)
		}
	}
}
