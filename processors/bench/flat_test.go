package bench_test

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
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
// get slower as history (idempotency keys, trace rows) grows. Next to the
// wall time of the ApplyBatch calls it reports the process's CPU time over
// each window (Pebble's flushes and compactions and the GC included, which
// run beside the calls): on a shared machine that is the steadier figure.
// With CHRONICLE_BENCH_FLAT_FLUSH=1 it also charges the first window and
// the whole run the flush of their own writes (below). It also reports
// the bytes Pebble flushed and compacted per event over the run
// (projections.Store.WriteMetrics): unlike CPU, they do not depend on the
// machine's load, and compaction is what grows with history.
func BenchmarkPerEventCost(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_FLAT_EVENTS")); err == nil {
		n = v
	}
	const window = 20000
	// CHRONICLE_BENCH_FLAT_FLUSH=1 also flushes the memtables after the
	// first window and at the end, and reports the CPU per event with the
	// flush of the events' own writes: of the first window, and of all
	// events. The first window's writes fit in one memtable, so without it
	// the first window owes a flush the last pays for earlier windows.
	flushed := os.Getenv("CHRONICLE_BENCH_FLAT_FLUSH") == "1"
	// the events are made a batch at a time, outside the timed calls: held
	// all at once they were most of the heap, and the collections that
	// marked them fell in one window and missed another (bench.EventSource)
	src, err := bench.NewEventSource()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		store, err := projections.Open(b.TempDir(), storeOptions())
		if err != nil {
			b.Fatal(err)
		}
		p := sessions.Processor{}
		var first, last, firstCPU, lastCPU, allCPU, firstFlush, endFlush, firstGC, lastGC time.Duration
		flush := func() time.Duration { // the CPU of a flush of the memtables
			c0 := bench.CPUTime()
			if err := store.Flush(); err != nil {
				b.Fatal(err)
			}
			return bench.CPUTime() - c0
		}
		for start := 0; start < n; start += 500 {
			envs := src.Batch(start, min(start+500, n))
			items := make([]projections.Item, len(envs))
			for j := range envs {
				items[j] = projections.Item{Pos: projections.Position{Topic: string(events.TopicSessions), Offset: int64(start + j)}, Env: &envs[j]}
			}
			profileWindow(b, start, n, window)
			t0, c0, g0 := time.Now(), bench.CPUTime(), gcCPU()
			if _, err := store.ApplyBatch(sessions.Name, items, p.Apply); err != nil {
				b.Fatal(err)
			}
			d, c, g := time.Since(t0), bench.CPUTime()-c0, gcCPU()-g0
			allCPU += c
			if flushed && start+500 == window {
				firstFlush = flush()
			}
			if start < window {
				first += d
				firstCPU += c
				firstGC += g
			}
			if start >= n-window {
				last += d
				lastCPU += c
				lastGC += g
			}
		}
		profileWindow(b, n, n, window)
		if flushed {
			endFlush = flush()
		}
		wm := store.WriteMetrics()
		store.Close()
		b.ReportMetric(float64(wm.CompactedBytes)/float64(n), "compacted_B/ev")
		b.ReportMetric(float64(wm.FlushedBytes)/float64(n), "flushed_B/ev")
		fmt.Printf("  Pebble: %d flushes, %.0f bytes flushed per event; %d compactions, %.0f bytes compacted per event\n", wm.Flushes, float64(wm.FlushedBytes)/float64(n), wm.Compactions, float64(wm.CompactedBytes)/float64(n))
		f, l := float64(first.Microseconds())/window, float64(last.Microseconds())/window
		b.ReportMetric(f, "first_us/ev")
		b.ReportMetric(l, "last_us/ev")
		b.ReportMetric(l/f, "last/first")
		fc, lc := float64(firstCPU.Microseconds())/window, float64(lastCPU.Microseconds())/window
		b.ReportMetric(fc, "first_cpu_us/ev")
		b.ReportMetric(lc, "last_cpu_us/ev")
		b.ReportMetric(lc/fc, "cpu_last/first")
		fmt.Printf("per-event cost, sessions processor: first %d events %.1f µs (CPU %.1f), last %d of %d %.1f µs (CPU %.1f): ×%.2f wall, ×%.2f CPU\n", window, f, fc, window, n, l, lc, l/f, lc/fc)
		fg, lg := float64(firstGC.Nanoseconds())/1e3/window, float64(lastGC.Nanoseconds())/1e3/window
		b.ReportMetric(fg, "first_gc_cpu_us/ev")
		b.ReportMetric(lg, "last_gc_cpu_us/ev")
		fmt.Printf("  of which the garbage collector (runtime/metrics): first %.2f µs, last %.2f µs per event\n", fg, lg)
		if flushed {
			ff := float64((firstCPU + firstFlush).Microseconds()) / window
			af := float64((allCPU + firstFlush + endFlush).Microseconds()) / float64(n)
			b.ReportMetric(ff, "first_flushed_cpu_us/ev")
			b.ReportMetric(af, "all_flushed_cpu_us/ev")
			b.ReportMetric(af/ff, "cpu_all/first_flushed")
			b.ReportMetric(lc/ff, "cpu_last/first_flushed")
			fmt.Printf("  with the flush of their writes: first %d events CPU %.1f µs, all %d %.1f µs: ×%.2f; last %d (the flushes of earlier writes in its window) ×%.2f\n", window, ff, n, af, af/ff, window, lc/ff)
		}
	}
}

// storeOptions are the store's defaults unless CHRONICLE_BENCH_CACHE_MB or
// CHRONICLE_BENCH_MEMTABLE_MB set the block cache or memtable size (to
// choose them by measurement).
func storeOptions() projections.Options {
	var o projections.Options
	if v, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_CACHE_MB")); err == nil {
		o.CacheSize = int64(v) << 20
	}
	if v, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_MEMTABLE_MB")); err == nil {
		o.MemTableSize = uint64(v) << 20
	}
	return o
}

// profileWindow writes a CPU profile of the first and of the last window
// to $CHRONICLE_BENCH_PROFILE-first.prof and -last.prof when that is set:
// what grows between them is what makes the cost not flat.
func profileWindow(b *testing.B, start, n, window int) {
	prefix := os.Getenv("CHRONICLE_BENCH_PROFILE")
	if prefix == "" {
		return
	}
	switch start {
	case 0, n - window:
		name := prefix + "-first.prof"
		if start > 0 {
			name = prefix + "-last.prof"
		}
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
	case window, n:
		pprof.StopCPUProfile()
	}
}

// gcCPU is the CPU the garbage collector has used so far in this process
// (runtime/metrics' /cpu/classes/gc/total:cpu-seconds, an estimate the
// runtime keeps).
func gcCPU() time.Duration {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	return time.Duration(m[0].Value.Float64() * float64(time.Second))
}
