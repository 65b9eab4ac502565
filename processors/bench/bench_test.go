package bench_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/bench"
)

// BenchmarkEngine runs `chronicle bench` once per iteration and reports its
// rates and their ratios to the raw franz-go job of the same run
// (CHRONICLE_BENCH_EVENTS overrides the 20,000 events).
func BenchmarkEngine(b *testing.B) {
	cfg := bench.Config{Dir: b.TempDir()}
	if n, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_EVENTS")); err == nil {
		cfg.Events = n
	}
	if only := os.Getenv("CHRONICLE_BENCH_ONLY"); only != "" { // e.g. count, to profile one job
		cfg.Only = map[string]bool{}
		for _, j := range strings.Split(only, ",") {
			cfg.Only[j] = true
		}
	}
	for i := 0; i < b.N; i++ {
		cfg.Dir = b.TempDir() // a fresh log and stores each time: a job on a store of the last run would find itself caught up
		res, err := bench.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.RawEventsPerS, "raw_ev/s")
		b.ReportMetric(res.CountRatio, "count_ratio")
		b.ReportMetric(res.DefaultRatio, "default_ratio")
		b.ReportMetric(res.ReplayRatio, "replay_ratio")
		b.ReportMetric(res.ClusterCost, "cluster_cost")
		b.ReportMetric(res.LatencyP99Ms, "p99_ms")
	}
}

// A short run measures every job and gives rates that are positive and
// ratios that are consistent with them.
func TestRunSmall(t *testing.T) {
	res, err := bench.Run(context.Background(), bench.Config{Events: 1500, Probes: 20, Partitions: 2, Runs: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.RawEventsPerS <= 0 || res.CountEventsPerS <= 0 || res.SingleEventsPerS <= 0 || res.DefaultEventsPerS <= 0 || res.ReplayEventsPerS <= 0 {
		t.Fatalf("a rate is not positive: %+v", res)
	}
	if len(res.SingleRuns) != 2 || len(res.DefaultRuns) != 2 || len(res.ReplayRuns) != 2 || len(res.DefaultCPURuns) != 2 || len(res.SingleCPURuns) != 2 || len(res.ReplayCPURuns) != 2 {
		t.Fatalf("runs: single %v, default %v, replay %v, CPU %v %v, want 2 each", res.SingleRuns, res.DefaultRuns, res.ReplayRuns, res.DefaultCPURuns, res.ReplayCPURuns)
	}
	if m := max(res.DefaultRuns[0], res.DefaultRuns[1]); res.DefaultEventsPerS != m {
		t.Fatalf("default rate %v is not the upper median of %v", res.DefaultEventsPerS, res.DefaultRuns)
	}
	if len(res.RawRuns) != bench.RawRuns {
		t.Fatalf("raw runs %v, want %d", res.RawRuns, bench.RawRuns)
	}
	if len(res.RawFirstPollMs) != bench.RawRuns || slices.Min(res.RawFirstPollMs) <= 0 {
		t.Fatalf("raw first polls %v ms, want %d positive waits", res.RawFirstPollMs, bench.RawRuns)
	}
	below, above := 0, 0
	for _, r := range res.RawRuns {
		if r < res.RawEventsPerS {
			below++
		} else if r > res.RawEventsPerS {
			above++
		}
	}
	if below > bench.RawRuns/2 || above > bench.RawRuns/2 {
		t.Fatalf("raw rate %v is not the median of %v", res.RawEventsPerS, res.RawRuns)
	}
	if res.ReplayRecords < 1500 || res.LatencyP99Ms < res.LatencyP50Ms || res.LatencyP50Ms <= 0 {
		t.Fatalf("replay records %d, latency p50 %v p99 %v", res.ReplayRecords, res.LatencyP50Ms, res.LatencyP99Ms)
	}
	if res.SingleCPUMicrosPerEvent > 0 {
		if d := res.ClusterCPUCost - (res.DefaultCPUMicrosPerEvent/res.SingleCPUMicrosPerEvent - 1); d > 1e-9 || d < -1e-9 {
			t.Fatalf("cluster CPU cost %v from CPU %v and %v", res.ClusterCPUCost, res.DefaultCPUMicrosPerEvent, res.SingleCPUMicrosPerEvent)
		}
	}
	if d := res.ClusterCost - (1 - res.DefaultEventsPerS/res.SingleEventsPerS); d > 1e-9 || d < -1e-9 {
		t.Fatalf("cluster cost %v for %v / %v", res.ClusterCost, res.DefaultEventsPerS, res.SingleEventsPerS)
	}
	if d := res.CountRatio - res.CountEventsPerS/res.RawEventsPerS; d > 1e-9 || d < -1e-9 {
		t.Fatalf("count ratio %v for %v / %v", res.CountRatio, res.CountEventsPerS, res.RawEventsPerS)
	}
}
