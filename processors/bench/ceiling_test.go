package bench_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/bench"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkPartitionCeiling is issue 15's "what does not scale": the
// memory bank reads chronicle.memories, one partition (a total order:
// events.SinglePartition), so its throughput on one core is the ceiling of
// the whole cluster's memory bank, however many instances run. It applies
// 20,000 events of one partition with memories.Processor through
// projections.Store.ApplyBatch in batches of 1,000 (the engine's
// MaxBatch), side by side with the sessions processor on 20,000 tau-bench
// events of one partition (a per-key processor: its partitions, and so its
// throughput, multiply with the partition count). The memory workload is
// one memory.recorded.v1 (a new memory; the processor looks for a
// duplicate to merge) per three memory.feedback.v1 on earlier memories.
// Run: go test -run '^$' -bench PartitionCeiling -benchtime=1x -count=3 ./processors/bench/
func BenchmarkPartitionCeiling(b *testing.B) {
	const n = 20000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := make([]events.Envelope, n)
	recorded := 0
	sigs := []string{"explicit_feedback", "task_completion", "code_stability"}
	for i := range mem {
		at := t0.Add(time.Duration(i) * time.Second)
		var err error
		if i%4 == 0 {
			mem[i], err = events.New(events.MemoryRecorded, "bench", fmt.Sprintf("r%d", i), at, events.MemoryRecordedData{
				MemoryID: fmt.Sprintf("m%d", recorded), Title: fmt.Sprintf("Check rule %d before changing a booking", recorded),
				Description: fmt.Sprintf("Rule %d of the airline policy applies to changes.", recorded), Content: fmt.Sprintf("Look up the reservation, then rule %d.", recorded),
				Outcome: "success", Source: "explicit"})
			recorded++
		} else {
			mem[i], err = events.New(events.MemoryFeedback, "bench", fmt.Sprintf("f%d", i), at, events.MemoryFeedbackData{
				MemoryID: fmt.Sprintf("m%d", (i*7919)%recorded), Signal: sigs[i%3], Positive: i%5 != 0})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	sess, err := bench.Events(n)
	if err != nil {
		b.Fatal(err)
	}
	// rate applies envs with p into an empty store, in one partition.
	rate := func(p processors.Processor, topic events.Topic, envs []events.Envelope) float64 {
		store, err := projections.Open(b.TempDir(), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		start := time.Now()
		for from := 0; from < len(envs); from += 1000 {
			items := make([]projections.Item, 0, 1000)
			for j := from; j < min(from+1000, len(envs)); j++ {
				items = append(items, projections.Item{Pos: projections.Position{Topic: string(topic), Offset: int64(j)}, Env: &envs[j]})
			}
			outs, err := store.ApplyBatch(p.Name(), items, p.Apply)
			if err != nil {
				b.Fatal(err)
			}
			for k, o := range outs {
				if o.Result == projections.DeadLettered {
					b.Fatalf("%s rejected event %d: %v", p.Name(), from+k, o.Err)
				}
			}
		}
		return float64(len(envs)) / time.Since(start).Seconds()
	}
	// the two run back to back in each iteration, so both see the same
	// load of the shared machine and their ratio is the figure to read
	for i := 0; i < b.N; i++ {
		m := rate(memories.Processor{}, events.TopicMemories, mem)
		s := rate(sessions.Processor{}, events.TopicSessions, sess)
		b.ReportMetric(m, "memories-events/s")
		b.ReportMetric(s, "sessions-events/s")
		b.ReportMetric(m/s, "memories/sessions")
	}
}
