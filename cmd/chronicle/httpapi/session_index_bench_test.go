package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// BenchmarkSessionEvents reads sessions' records back from the log at the
// demo's log size (the 200 bundled tau-bench sessions, 6,872 events, one
// partition as `chronicle demo` runs), side by side: "scan" is what
// GET /v1/sessions/{id}/events did before the sessionlog index (a scan of
// the session's partition from offset 0, httpapi.ReadSessionLog), "index"
// what it does now (httpapi.ReadIndexedSession: the index rows, then a
// fetch at those offsets, which also returns the session's evaluation and
// memories). Each iteration reads one session (round-robin over the 200)
// with both readers in turn; the metrics are each reader's p50 and p99
// latency and the ratio of the p50s (scan / index).
//
// CHRONICLE_BENCH_LOG_COPIES=k imports the sample k times (copy c in
// scope project:copy<c>), a k times longer log, and reads the last copy.
//
//	go test ./cmd/chronicle/httpapi -run '^$' -bench SessionEvents -benchtime 200x -count 3
func BenchmarkSessionEvents(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: b.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	copies := 1
	if c, err := strconv.Atoi(os.Getenv("CHRONICLE_BENCH_LOG_COPIES")); err == nil && c > 1 {
		copies = c
	}
	var keys []string
	for c := 0; c < copies; c++ {
		for _, r := range recs {
			envs, err := taubench.Events(r)
			if err != nil {
				b.Fatal(err)
			}
			if copies > 1 {
				for i := range envs {
					envs[i].Scope = fmt.Sprintf("project:copy%d", c)
					envs[i].ID = fmt.Sprintf("%s-copy%d", envs[i].ID, c) // not a duplicate of the first copy
				}
			}
			if err := p.Producer.Publish(ctx, envs...); err != nil {
				b.Fatal(err)
			}
			if c == copies-1 {
				keys = append(keys, events.EntityKey(envs[0].EffectiveScope(), envs[0].SessionID))
			}
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		b.Fatal(err)
	}
	read := map[string]func(key string) (int, error){
		"scan": func(key string) (int, error) {
			scope, _, _ := events.SplitEntityKey(key)
			l, err := httpapi.ReadSessionLog(ctx, p.Broker.Addrs(), key, scope)
			return len(l), err
		},
		"index": func(key string) (int, error) {
			scope, _, _ := events.SplitEntityKey(key)
			r, ok, err := httpapi.ReadIndexedSession(ctx, p.Broker.Addrs(), p.Store, key, scope)
			if !ok && err == nil {
				err = fmt.Errorf("%s not indexed", key)
			}
			return len(r.Events), err
		},
	}
	// the two readers alternate, session by session, so that a noisy
	// machine's load falls on both alike
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := keys[i%len(keys)]
		for _, name := range []string{"scan", "index"} {
			t0 := time.Now()
			n, err := read[name](key)
			if err != nil || n == 0 {
				b.Fatalf("%s %s: %d events, %v", name, key, n, err)
			}
			lat[name] = append(lat[name], time.Since(t0))
		}
	}
	b.StopTimer()
	q := func(l []time.Duration, f float64) float64 {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return float64(l[int(f*float64(len(l)-1))].Microseconds()) / 1000
	}
	for _, name := range []string{"scan", "index"} {
		b.ReportMetric(q(lat[name], 0.5), name+"_p50_ms")
		b.ReportMetric(q(lat[name], 0.99), name+"_p99_ms")
	}
	b.ReportMetric(q(lat["scan"], 0.5)/q(lat["index"], 0.5), "p50_ratio")
}
