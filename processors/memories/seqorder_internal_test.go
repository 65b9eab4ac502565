package memories

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A memory's retrievals past its millionth are listed in log order: their
// rows' keys sort numerically (projections.SeqKey). With %06d, the
// 1,000,000th sorted between the 100,000th and the 100,001st. The
// memory's count is set near the boundary in its row (a million
// retrievals through Apply would take a minute), as Apply left it.
func TestRetrievalsPastAMillionStayInOrder(t *testing.T) {
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	off := int64(0)
	send := func(typ events.Type, data any) {
		t.Helper()
		env, err := events.New(typ, "test", fmt.Sprintf("e%d", off), at, data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if _, err := s.Apply(Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &env, Processor{}.Apply); err != nil {
			t.Fatal(err)
		}
		off++
	}
	send(events.MemoryRecorded, events.MemoryRecordedData{MemoryID: "m", Title: "t", Description: "d", Content: "c", Outcome: "success", Source: "explicit"})
	key := events.EntityKey("project:a", "m")
	// retrievals 0 and 100,000, then the count moved to 999,998
	for _, n := range []int{0, 100_000, 999_998} {
		bump := events.Envelope{ID: fmt.Sprintf("bump-%d", n), Type: events.MemoryRecorded}
		if _, err := s.Apply(Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &bump, func(tx *projections.Tx, _ *events.Envelope) error {
			var m Memory
			if ok, err := tx.GetJSON(memKey(key), &m); err != nil || !ok {
				return fmt.Errorf("memory row: %v %v", ok, err)
			}
			m.Retrievals = n
			return tx.SetJSON(memKey(key), m)
		}); err != nil {
			t.Fatal(err)
		}
		off++
		send(events.MemoryRetrieved, map[string]any{"memory_id": "m", "query": fmt.Sprint(n)})
	}
	for range 3 { // 999,999, 1,000,000 and 1,000,001
		send(events.MemoryRetrieved, map[string]any{"memory_id": "m", "query": "late"})
	}
	rs, err := Retrievals(s, key)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Query)
	}
	if fmt.Sprint(got) != "[0 100000 999998 late late late]" {
		t.Fatalf("retrievals in key order: %v; want the log's order", got)
	}
}
