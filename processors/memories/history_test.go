package memories_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// TestHistoryAuthorsAndRetrievals: every history entry names its author
// (recorded_by, a signal's source, the distilling session), the
// feedback's comment and the causing event's log position; retrievals are
// listed with who ran the search, when and where in the log — also those
// of a memory whose id extends another's are kept apart.
func TestHistoryAuthorsAndRetrievals(t *testing.T) {
	b := newBank(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.send(events.MemoryRecorded, t0, "project:a", events.MemoryRecordedData{MemoryID: "m", Title: "Fare rules", Description: "d", Content: "Check the fare rules", Outcome: "success", Source: "explicit", RecordedBy: "token:alice"}))
	must(b.send(events.MemoryRecorded, t0, "project:a", events.MemoryRecordedData{MemoryID: "m/x", Title: "Other", Description: "d", Content: "other", Outcome: "success", Source: "explicit"}))
	must(b.send(events.MemoryRecorded, t0, "project:a", events.MemoryRecordedData{MemoryID: "m2", Title: "fare rules", Description: "d", Content: "check the fare rules", Outcome: "success", Source: "distilled", SourceSession: "s7"}))
	must(b.send(events.MemoryRetrieved, t0, "project:a", map[string]any{"memory_id": "m", "query": "fare", "rank": 1, "relevance": 0.9, "source": "token:bob"}))
	must(b.send(events.MemoryRetrieved, t0, "project:a", map[string]any{"memory_id": "m/x", "query": "other", "rank": 1, "source": "token:bob"}))
	must(b.send(events.MemoryRetrieved, t0, "project:a", map[string]any{"memory_id": "m", "query": "rules", "rank": 2, "session_id": "s9"}))
	must(b.send(events.MemoryFeedback, t0, "project:a", events.MemoryFeedbackData{MemoryID: "m", Signal: "explicit_feedback", Positive: true, Comment: "saved me a call", Source: "mcp:claude"}))

	key := events.EntityKey("project:a", "m")
	changes, signals, err := memories.History(b.store, key)
	must(err)
	want := []struct{ reason, author, comment, pos string }{
		{"created", "token:alice", "", "chronicle.memories:0:0"},
		{"evidence", "session:s7", "", "chronicle.memories:0:2"},
		{"signal", "mcp:claude", "saved me a call", "chronicle.memories:0:6"},
	}
	var own []memories.Change
	for _, c := range changes {
		if c.Reason != "usage" {
			own = append(own, c)
		}
	}
	if len(own) < len(want) {
		t.Fatalf("changes %+v", changes)
	}
	for i, w := range want {
		c := own[i]
		if c.Reason != w.reason && !(w.reason == "signal" && c.Reason == "consensus") || c.Author != w.author || c.Comment != w.comment || c.Position != w.pos {
			t.Errorf("change %d: %+v, want %+v", i, c, w)
		}
	}
	if len(signals) != 1 || signals[0].Comment != "saved me a call" || signals[0].Source != "mcp:claude" || signals[0].Position != "chronicle.memories:0:6" {
		t.Errorf("signals %+v", signals)
	}
	rs, err := memories.Retrievals(b.store, key)
	must(err)
	if len(rs) != 2 || rs[0].Source != "token:bob" || rs[0].Query != "fare" || rs[0].Position != "chronicle.memories:0:3" || rs[0].Time == "" ||
		rs[1].SessionID != "s9" || rs[1].Rank != 2 || rs[1].Position != "chronicle.memories:0:5" {
		t.Errorf("retrievals %+v", rs)
	}
	m, _, err := memories.Get(b.store, key)
	must(err)
	if m.Retrievals != 2 {
		t.Errorf("retrievals count %d", m.Retrievals)
	}
}
