package bench_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/bench"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkPerEventCost applies N tau-bench events (default 200,000;
// CHRONICLE_BENCH_FLAT_EVENTS) with the sessions processor through
// ApplyBatch in batches of 500, as the engine does, and reports the cost
// per event of the first 20,000 and of the last 20,000: the store must not
// get slower as history (idempotency keys, trace rows) grows.
func BenchmarkPerEventCost(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_FLAT_EVENTS")); err == nil {
		n = v
	}
	const window = 20000
	envs, err := bench.Events(n)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		store, err := projections.Open(b.TempDir(), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		p := sessions.Processor{}
		var first, last time.Duration
		for start := 0; start < len(envs); start += 500 {
			items := make([]projections.Item, 0, 500)
			for j := start; j < min(start+500, len(envs)); j++ {
				items = append(items, projections.Item{Pos: projections.Position{Topic: string(events.TopicSessions), Offset: int64(j)}, Env: &envs[j]})
			}
			t0 := time.Now()
			if _, err := store.ApplyBatch(sessions.Name, items, p.Apply); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			if start < window {
				first += d
			}
			if start >= len(envs)-window {
				last += d
			}
		}
		store.Close()
		f, l := float64(first.Microseconds())/window, float64(last.Microseconds())/window
		b.ReportMetric(f, "first_us/ev")
		b.ReportMetric(l, "last_us/ev")
		b.ReportMetric(l/f, "last/first")
		fmt.Printf("per-event cost, sessions processor: first %d events %.1f µs, last %d of %d %.1f µs (×%.2f)\n", window, f, window, len(envs), l, l/f)
	}
}
