package memories_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A merge counts its recorder as its source when it has no source
// session, once per memory (issue 11, "Usage counts distinct users"). A
// walkthrough (2026-11-29) had one token re-record the same memory through
// POST /v1/memories (recorded_by "token:mallory", no source_session): each
// merge gave use() no source, which counted as a new one, so usage_count
// rose by one per resend and after four a single feedback of that same
// token applied alone, without the consensus of 2 distinct sources.
func TestRerecordingByOneCallerCountsOneSource(t *testing.T) {
	b := newBank(t)
	rec := events.MemoryRecordedData{MemoryID: "m", Title: "t m", Description: "d", Content: "c m",
		Outcome: "success", Source: "explicit", RecordedBy: "token:mallory"}
	for i := 0; i < 5; i++ {
		if err := b.send(events.MemoryRecorded, t0.Add(time.Duration(i)*time.Second), "project:a", rec); err != nil {
			t.Fatal(err)
		}
	}
	m := b.get("m")
	if m.Evidence != 5 {
		t.Fatalf("evidence %d, want 5", m.Evidence)
	}
	if m.UsageCount > 1 {
		t.Errorf("five recordings by one token (token:mallory): usage_count %d, want at most 1 (one distinct source)", m.UsageCount)
	}
	b.signalFrom("m", "token:mallory", false, t0.Add(time.Minute))
	if c := b.get("m").Confidence; c != 0.8 {
		t.Errorf("one negative signal of the only source moved confidence 0.8 → %v without consensus of 2 distinct sources", c)
	}
}

// Merges that name neither a source session nor a recorder (events of
// producers that name no one) cannot be told apart: together they count as
// one anonymous source, once per memory. A recorder and a session are
// sources of their own.
func TestAnonymousMergesCountOnce(t *testing.T) {
	b := newBank(t)
	rec := events.MemoryRecordedData{MemoryID: "m", Title: "t m", Description: "d", Content: "c m",
		Outcome: "success", Source: "explicit"}
	for i := 0; i < 4; i++ {
		if err := b.send(events.MemoryRecorded, t0.Add(time.Duration(i)*time.Second), "project:a", rec); err != nil {
			t.Fatal(err)
		}
	}
	if m := b.get("m"); m.Evidence != 4 || m.UsageCount != 1 {
		t.Errorf("one recording and three anonymous merges: evidence %d usage %d, want 4 and 1", m.Evidence, m.UsageCount)
	}
	rec.RecordedBy = "token:bob"
	if err := b.send(events.MemoryRecorded, t0.Add(time.Minute), "project:a", rec); err != nil {
		t.Fatal(err)
	}
	rec.RecordedBy, rec.SourceSession = "token:bob", "s1"
	if err := b.send(events.MemoryRecorded, t0.Add(time.Minute), "project:a", rec); err != nil {
		t.Fatal(err)
	}
	if m := b.get("m"); m.UsageCount != 3 {
		t.Errorf("then a merge by token:bob and one from session s1: usage %d, want 3 (anonymous, token:bob, session:s1)", m.UsageCount)
	}
}
