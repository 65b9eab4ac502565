package memories_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
)

// createdRun records a memory, a duplicate of it under another id and a
// feedback signal in a fresh store, and returns every derived record the
// memory bank emitted, in order.
func createdRun(t *testing.T) []projections.OutboxRecord {
	t.Helper()
	b := newBank(t)
	var out []projections.OutboxRecord
	send := func(typ events.Type, id string, data any) {
		env, err := events.New(typ, "test", id, t0, data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if _, err := b.store.Apply(memories.Name, projections.Position{Topic: "chronicle.memories", Offset: b.off}, &env, func(tx *projections.Tx, env *events.Envelope) error {
			err := memories.Processor{}.Apply(tx, env)
			out = append(out, tx.Emitted()...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		b.off++
	}
	send(events.MemoryRecorded, "r1", events.MemoryRecordedData{MemoryID: "m1", Title: "Check the fare", Content: "Look up the fare first", Outcome: "success", Source: "explicit"})
	send(events.MemoryRecorded, "r2", events.MemoryRecordedData{MemoryID: "m2", Title: "check the fare", Description: "another description", Content: "look up the fare  first", Outcome: "success", Source: "distilled", SourceSession: "s9", Tags: []string{"zzz"}})
	return out
}

// TestMemoryCreatedEmitted: a new memory and a recording merged into it
// each emit memory.created.v1 on chronicle.learned, keyed by the memory
// (the recording's memory id, or the one a merge went into: its other
// learned events' partition), valid against its schema, the merge naming the
// memory it went into; a second run on a fresh store emits the same bytes
// (ids derive from the cause), so subscribers drop a replayed repeat.
func TestMemoryCreatedEmitted(t *testing.T) {
	out := createdRun(t)
	var created []events.MemoryCreatedData
	for _, rec := range out {
		if rec.Type != events.MemoryCreated {
			continue
		}
		if rec.Topic != string(events.TopicLearned) {
			t.Fatalf("memory.created on %s, want chronicle.learned", rec.Topic)
		}
		env, err := events.ParseEvent(rec.Value) // schema-validated
		if err != nil {
			t.Fatal(err)
		}
		var d events.MemoryCreatedData
		if err := env.Decode(&d); err != nil {
			t.Fatal(err)
		}
		want := events.EntityKey("project:a", d.MemoryID)
		if d.MergedInto != "" {
			want = events.EntityKey("project:a", d.MergedInto) // the memory's partition (events.TypeInfo.KeyOver)
		}
		if rec.Key != want {
			t.Fatalf("key %q, want %q", rec.Key, want)
		}
		created = append(created, d)
	}
	if len(created) != 2 {
		t.Fatalf("%d memory.created events, want 2: %+v", len(created), created)
	}
	if c := created[0]; c.MemoryID != "m1" || c.MergedInto != "" || c.Evidence != 1 || c.Confidence != 0.8 || c.RecordedEventID != "r1" {
		t.Fatalf("created: %+v", c)
	}
	// the merge carries the memory's text, not the recording's (a
	// subscriber upserting by it overwrote the memory's)
	if c := created[1]; c.MemoryID != "m2" || c.MergedInto != "m1" || c.Evidence != 2 || c.SourceSession != "s9" || c.Title != "Check the fare" || c.Description != "" || len(c.Tags) != 0 {
		t.Fatalf("merged: %+v", c)
	}
	again := createdRun(t)
	if len(again) != len(out) {
		t.Fatalf("second run emitted %d records, first %d", len(again), len(out))
	}
	for i := range out {
		if !bytes.Equal(out[i].Value, again[i].Value) {
			t.Fatalf("record %d differs between runs:\n%s\n%s", i, out[i].Value, again[i].Value)
		}
	}
}

// TestMergeIntoAPrunedMemorySaysSo: a recording merged into a memory that
// was pruned emits memory.created.v1 with pruned true (valid against its
// schema), so a subscriber that upserts memories from the learned topic
// keeps the memory out of its set; a merge into a live memory carries no
// pruned member. Before, the merge's event looked like a live memory's
// (confidence 0.2 below the 0.3 threshold, nothing else), so a subscriber
// re-added a memory Chronicle's searches no longer return (a downstream
// Kafka consumer's walkthrough, 2026-12-07).
func TestMergeIntoAPrunedMemorySaysSo(t *testing.T) {
	b := newBank(t)
	var created []events.MemoryCreatedData
	send := func(typ events.Type, id string, data any) {
		t.Helper()
		env, err := events.New(typ, "test", id, t0, data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if _, err := b.store.Apply(memories.Name, projections.Position{Topic: "chronicle.memories", Offset: b.off}, &env, func(tx *projections.Tx, env *events.Envelope) error {
			err := memories.Processor{}.Apply(tx, env)
			for _, rec := range tx.Emitted() {
				if rec.Type != events.MemoryCreated {
					continue
				}
				parsed, perr := events.ParseEvent(rec.Value) // schema-validated
				if perr != nil {
					t.Fatalf("memory.created: %v\n%s", perr, rec.Value)
				}
				var d events.MemoryCreatedData
				if derr := parsed.Decode(&d); derr != nil {
					t.Fatal(derr)
				}
				created = append(created, d)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		b.off++
	}
	rec := events.MemoryRecordedData{MemoryID: "m1", Title: "Check the fare", Content: "Look up the fare first", Outcome: "failure", Source: "distilled", SourceSession: "s1"}
	send(events.MemoryRecorded, "r1", rec)
	again := rec
	again.MemoryID, again.SourceSession = "m2", "s2"
	send(events.MemoryRecorded, "r2", again) // a merge into a live memory
	for i, who := range []string{"token:a", "token:b"} {
		send(events.MemoryFeedback, fmt.Sprintf("f%d", i), events.MemoryFeedbackData{MemoryID: "m1", Signal: "explicit_feedback", Positive: false, Source: who})
	}
	if m := b.get("m1"); !m.Pruned {
		t.Fatalf("m1 not pruned after two negative signals: confidence %v", m.Confidence)
	}
	again.MemoryID, again.SourceSession = "m3", "s3"
	send(events.MemoryRecorded, "r3", again) // a merge into the pruned memory
	if len(created) != 3 {
		t.Fatalf("%d memory.created events, want 3: %+v", len(created), created)
	}
	if c := created[1]; c.MergedInto != "m1" || c.Pruned {
		t.Fatalf("merge into a live memory: %+v, want merged_into m1 and no pruned", c)
	}
	if c := created[2]; c.MergedInto != "m1" || !c.Pruned {
		t.Fatalf("merge into a pruned memory: %+v, want merged_into m1 and pruned true", c)
	}
}
