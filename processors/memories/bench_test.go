package memories_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkConfidenceUpdates applies memory.feedback events to 1,000
// memories through the real Pebble store (one batch per event, as live),
// side by side with a no-op processor on the same store path: the
// difference is the cost of the confidence rules themselves.
func BenchmarkConfidenceUpdates(b *testing.B) {
	const nmem = 1000
	prep := func(b *testing.B) (*projections.Store, []events.Envelope) {
		s, err := projections.Open(b.TempDir(), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < nmem; i++ {
			env, _ := events.New(events.MemoryRecorded, "bench", fmt.Sprintf("r%d", i), t0, events.MemoryRecordedData{
				MemoryID: fmt.Sprintf("m%d", i), Title: fmt.Sprintf("t%d", i), Description: "d", Content: fmt.Sprintf("c%d", i), Outcome: "success", Source: "explicit"})
			if _, err := s.Apply(memories.Name, projections.Position{Topic: "m", Offset: int64(i)}, &env, memories.Processor{}.Apply); err != nil {
				b.Fatal(err)
			}
		}
		fb := make([]events.Envelope, b.N)
		sigs := []string{"explicit_feedback", "task_completion", "code_stability"}
		for i := range fb {
			fb[i], _ = events.New(events.MemoryFeedback, "bench", fmt.Sprintf("f%d", i), t0.Add(time.Duration(i)*time.Minute), events.MemoryFeedbackData{
				MemoryID: fmt.Sprintf("m%d", i%nmem), Signal: sigs[i%3], Positive: i%4 != 0})
		}
		return s, fb
	}
	run := func(b *testing.B, fn projections.ApplyFunc) {
		s, fb := prep(b)
		defer s.Close()
		b.ResetTimer()
		start := time.Now()
		for i := range fb {
			if _, err := s.Apply(memories.Name, projections.Position{Topic: "m", Offset: int64(nmem + i)}, &fb[i], fn); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	}
	b.Run("memories", func(b *testing.B) { run(b, memories.Processor{}.Apply) })
	b.Run("noop-baseline", func(b *testing.B) { run(b, func(*projections.Tx, *events.Envelope) error { return nil }) })
}
