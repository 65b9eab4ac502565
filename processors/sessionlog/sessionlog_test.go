package sessionlog_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestEntries: records of a session on four topics (chronicle.memories'
// by the Memories table) are indexed under the session's EntityKey with
// their positions (an id with '/' does not leak
// into another session's prefix), a memory recorded for the session is
// indexed under it though keyed by the memory, and records of no session
// (a memory without source_session, a confidence change) are not; a PAIR
// context on chronicle.learned is.
func TestEntries(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	apply := func(topic events.Topic, part int32, off int64, typ events.Type, sid string, data any) {
		t.Helper()
		env, err := events.New(typ, "test", "e"+string(rune('a'+n)), at, data)
		if err != nil {
			t.Fatal(err)
		}
		n++
		env.Scope, env.SessionID = "project:a", sid
		name, apply := sessionlog.Name, sessionlog.Processor{}.Apply
		if topic == events.TopicMemories { // the memory records' global table
			name, apply = sessionlog.MemoriesName, sessionlog.Memories{}.Apply
		}
		if _, err := store.Apply(name, projections.Position{Topic: string(topic), Partition: part, Offset: off}, &env, apply); err != nil {
			t.Fatal(err)
		}
	}
	minute := map[string]any{"event_type": "note", "actor": "a", "data": map[string]any{}}
	apply(events.TopicSessions, 1, 7, events.MinuteRecorded, "s", minute)
	apply(events.TopicSessions, 1, 9, events.MinuteRecorded, "s/x", minute) // another session, its id extends "s"
	apply(events.TopicSessions, 1, 12, events.MinuteRecorded, "s", minute)
	apply(events.TopicEvaluations, 0, 3, events.EvaluationCompleted, "", map[string]any{"session_id": "s", "criteria": []any{}, "composite": 50, "gaps": []any{}, "recommendation": "needs_improvement"})
	apply(events.TopicMemories, 0, 40, events.MemoryRecorded, "", events.MemoryRecordedData{MemoryID: "m1", Title: "t", Description: "d", Content: "c", Outcome: "success", Source: "distilled", SourceSession: "s"})
	apply(events.TopicMemories, 0, 41, events.MemoryRecorded, "", events.MemoryRecordedData{MemoryID: "m2", Title: "t2", Description: "d", Content: "c2", Outcome: "success", Source: "explicit"})
	apply(events.TopicLearned, 1, 8, events.PairContextRetrieved, "", map[string]any{"session_id": "s", "iteration": 1, "composite": 40, "gaps": []any{}, "recommendation": "revise_without_patterns"})
	apply(events.TopicLearned, 0, 5, events.MemoryConfidenceChanged, "", map[string]any{"memory_id": "m1", "old": 0.7, "new": 0.8, "signals_applied": []any{}, "reason": "signal"})

	got, err := sessionlog.Entries(store, events.EntityKey("project:a", "s"))
	if err != nil {
		t.Fatal(err)
	}
	pos := func(kind string) []string {
		var out []string
		for _, e := range got[kind] {
			out = append(out, e.Position.String())
		}
		return out
	}
	check := func(kind string, want ...string) {
		t.Helper()
		g := pos(kind)
		if len(g) != len(want) {
			t.Fatalf("%s: %v, want %v", kind, g, want)
		}
		for i := range want {
			if g[i] != want[i] {
				t.Fatalf("%s: %v, want %v", kind, g, want)
			}
		}
	}
	check(sessionlog.KindEvent, "chronicle.sessions:1:7", "chronicle.sessions:1:12")
	check(sessionlog.KindEvaluation, "chronicle.evaluations:0:3")
	check(sessionlog.KindMemory, "chronicle.memories:0:40")
	check(sessionlog.KindPairContext, "chronicle.learned:1:8")
	if got[sessionlog.KindEvent][0].Type != events.MinuteRecorded {
		t.Fatalf("type %q", got[sessionlog.KindEvent][0].Type)
	}
	other, err := sessionlog.Entries(store, events.EntityKey("project:a", "s/x"))
	if err != nil || len(other[sessionlog.KindEvent]) != 1 {
		t.Fatalf("s/x: %v %v", other, err)
	}
	if b, err := sessionlog.Entries(store, events.EntityKey("project:b", "s")); err != nil || len(b) != 0 {
		t.Fatalf("project:b/s: %v %v", b, err)
	}
}
