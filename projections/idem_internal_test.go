package projections

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// One tenant's (source, id) does not make another tenant's event a
// duplicate: the scope is part of the idempotency key. Before, the second
// scope's event was dead-lettered as a conflicting duplicate (another
// scope is other content), so a tenant could make another's accepted
// events vanish by reusing their ids (found by a walkthrough with two
// scoped tokens).
func TestSameIDInTwoScopesIsTwoEvents(t *testing.T) {
	store, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mk := func(scope string) events.Envelope {
		env, err := events.New(events.MemoryFeedback, "walk/test", "s1-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		return env
	}
	a, b, bAgain := mk("project:a"), mk("project:b"), mk("project:b")
	implicit, explicit := mk(""), mk(events.DefaultScope)
	apply := func(env *events.Envelope, off int64) (Result, error) {
		return store.Apply("p", Position{Topic: "t", Offset: off}, env, func(*Tx, *events.Envelope) error { return nil })
	}
	for i, c := range []struct {
		env  *events.Envelope
		want Result
	}{{&a, Applied}, {&b, Applied}, {&bAgain, Duplicate}, {&implicit, Applied}} {
		if r, err := apply(c.env, int64(i)); err != nil || r != c.want {
			t.Fatalf("event %d (scope %q): %v %v, want %v", i, c.env.Scope, r, err, c.want)
		}
	}
	// no scope is org:default's: spelled out, it is the same event (it was
	// a conflicting duplicate until dedup version 4)
	if r, err := apply(&explicit, 9); err != nil || r != Duplicate {
		t.Fatalf("the same event with its default scope spelled out: %v %v, want a duplicate", r, err)
	}
	other := mk("")
	other.Data = []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`)
	if _, err := apply(&other, 10); !errors.Is(err, ErrConflictingDuplicate) {
		t.Fatalf("other data under the id: %v, want a conflicting duplicate", err)
	}
	// on chronicle.memories (one partition, one order) the id stays one
	// event's across memories: another memory's is a conflicting duplicate
	elsewhere := mk("")
	elsewhere.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":true}`)
	if _, err := apply(&elsewhere, 11); !errors.Is(err, ErrConflictingDuplicate) {
		t.Fatalf("the id for another memory: %v, want a conflicting duplicate", err)
	}
	// on a topic of several partitions, the same (source, id) for another
	// entity (another record key, so possibly another partition) is
	// another event: applied. It was a conflicting duplicate, but which of
	// the two was applied second depended on which partition got there
	// first, so live and replay could differ (a raw-Kafka walkthrough,
	// 2026-11-30)
	started := func(session string) events.Envelope {
		env, err := events.New(events.SessionStarted, "walk/test", "st-1", time.Unix(1700000000, 0), events.SessionStartedData{OriginalTask: "t " + session,
			SuccessCriteria: []events.Criterion{{ID: "c1", Description: "d", Weight: 1, Check: events.Check{Kind: events.CheckOutputContains, Text: "ok"}}}})
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID = session
		return env
	}
	s1, s2 := started("s1"), started("s2")
	for i, env := range []*events.Envelope{&s1, &s2} {
		if r, err := apply(env, int64(20+i)); err != nil || r != Applied {
			t.Fatalf("session %s under the shared id: %v %v, want applied", env.SessionID, r, err)
		}
	}
	for _, env := range []*events.Envelope{&a, &b} {
		if _, applied, same, err := store.AppliedAt("p", env); err != nil || !applied || !same {
			t.Fatalf("AppliedAt of %s's event: %v %v %v", env.Scope, applied, same, err)
		}
	}
}

// A store written before the scope was part of idempotency keys (keys
// under m/dedup/, hashed from source and id) keeps its exactly-once: an
// event applied then is still a duplicate, or a conflicting one, after
// the upgrade, before and after the key filter's fill; new keys go under
// m/idem/.
func TestIdempotencyKeysWrittenBeforeTheScope(t *testing.T) {
	dir := t.TempDir()
	store, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.MemoryFeedback, "test", "old-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	// what the code before wrote for it: offset 3, version 3, contentHashV3
	v3 := append(append(binary.BigEndian.AppendUint64(nil, 3), 3), contentHashV3(&env)...)
	if err := store.db.Set(dedupKeyIn(prefixDedup, "p", legacyIDHash(&env)), v3, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	other := env
	other.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":true}`)
	fresh := env
	fresh.ID = "new-1"
	noop := func(*Tx, *events.Envelope) error { return nil }
	for round, wait := range []bool{false, true} {
		store, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !store.hasLegacyDedup {
			t.Fatal("a store with m/dedup/ keys is not read as one")
		}
		if wait && !waitReady(store) {
			t.Fatal("the key filter is not ready after 10 s")
		}
		off := int64(10 * (round + 1))
		if r, err := store.Apply("p", Position{Topic: "t", Offset: off}, &env, noop); err != nil || r != Duplicate {
			t.Fatalf("round %d: the event applied before the upgrade: %v %v, want a duplicate", round, r, err)
		}
		if _, err := store.Apply("p", Position{Topic: "t", Offset: off + 1}, &other, noop); !errors.Is(err, ErrConflictingDuplicate) {
			t.Fatalf("round %d: other content under its id: %v, want a conflicting duplicate", round, err)
		}
		if at, applied, same, err := store.AppliedAt("p", &env); err != nil || !applied || !same || at != 3 {
			t.Fatalf("round %d: AppliedAt %d %v %v %v, want offset 3", round, at, applied, same, err)
		}
		if r, err := store.Apply("p", Position{Topic: "t", Offset: off + 2}, &fresh, noop); err != nil || r != Applied && round == 0 || r != Duplicate && round == 1 {
			t.Fatalf("round %d: a new event: %v %v", round, r, err)
		}
		if _, closer, err := store.db.Get(dedupKey("p", IDHash(&fresh))); err != nil {
			t.Fatalf("the new event's key is not under m/idem/: %v", err)
		} else {
			closer.Close()
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// a store created now holds no m/dedup/ key and does not look there
	s2, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.hasLegacyDedup {
		t.Fatal("a new store reads as one with m/dedup/ keys")
	}
}

// A store written before the record key was part of idempotency keys
// (keys under m/idem/, scopedIDHash) keeps its exactly-once: an event
// applied then is still a duplicate, with other content a conflicting
// one, after the upgrade, before and after the key filter's fill; new keys
// go under m/idk/; a store created now holds none under m/idem/.
func TestIdempotencyKeysWrittenBeforeTheRecordKey(t *testing.T) {
	dir := t.TempDir()
	store, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.MemoryFeedback, "test", "old-2", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	// what the code before wrote for it: offset 4, this version's content hash
	if err := store.db.Set(dedupKeyIn(prefixIdem, "p", scopedIDHash(&env)), dedupValue(4, ContentHash(&env)), nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	other := env
	other.Data = []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`)
	fresh := env
	fresh.ID = "new-2"
	noop := func(*Tx, *events.Envelope) error { return nil }
	for round, wait := range []bool{false, true} {
		store, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !store.hasLegacyIdem {
			t.Fatal("a store with m/idem/ keys is not read as one")
		}
		if wait && !waitReady(store) {
			t.Fatal("the key filter is not ready after 10 s")
		}
		off := int64(10 * (round + 1))
		if r, err := store.Apply("p", Position{Topic: "t", Offset: off}, &env, noop); err != nil || r != Duplicate {
			t.Fatalf("round %d: the event applied before the upgrade: %v %v, want a duplicate", round, r, err)
		}
		if _, err := store.Apply("p", Position{Topic: "t", Offset: off + 1}, &other, noop); !errors.Is(err, ErrConflictingDuplicate) {
			t.Fatalf("round %d: other content under its id: %v, want a conflicting duplicate", round, err)
		}
		if at, applied, same, err := store.AppliedAt("p", &env); err != nil || !applied || !same || at != 4 {
			t.Fatalf("round %d: AppliedAt %d %v %v %v, want offset 4", round, at, applied, same, err)
		}
		if r, err := store.Apply("p", Position{Topic: "t", Offset: off + 2}, &fresh, noop); err != nil || r != Applied && round == 0 || r != Duplicate && round == 1 {
			t.Fatalf("round %d: a new event: %v %v", round, r, err)
		}
		if _, closer, err := store.db.Get(dedupKeyIn(prefixIdk, "p", IDHash(&fresh))); err != nil {
			t.Fatalf("the new event's key is not under m/idk/: %v", err)
		} else {
			closer.Close()
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.hasLegacyIdem {
		t.Fatal("a new store reads as one with m/idem/ keys")
	}
}
