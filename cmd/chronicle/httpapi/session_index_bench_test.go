package httpapi_test

import (
	"context"
	"fmt"
	"sort"
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
// memories). Each iteration reads one session, in a fixed round-robin
// order; p50_ms and p99_ms are the latencies of the iterations.
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
	var keys []string
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, events.EntityKey(envs[0].EffectiveScope(), envs[0].SessionID))
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		b.Fatal(err)
	}
	scope, _, _ := events.SplitEntityKey(keys[0])
	read := map[string]func(key string) (int, error){
		"scan": func(key string) (int, error) {
			l, err := httpapi.ReadSessionLog(ctx, p.Broker.Addrs(), key, scope)
			return len(l), err
		},
		"index": func(key string) (int, error) {
			r, ok, err := httpapi.ReadIndexedSession(ctx, p.Broker.Addrs(), p.Store, key, scope)
			if !ok && err == nil {
				err = fmt.Errorf("%s not indexed", key)
			}
			return len(r.Events), err
		},
	}
	for _, name := range []string{"scan", "index"} {
		b.Run(name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				n, err := read[name](keys[i%len(keys)])
				if err != nil || n == 0 {
					b.Fatalf("%s: %d events, %v", keys[i%len(keys)], n, err)
				}
				lat = append(lat, time.Since(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50_ms")
			b.ReportMetric(q(0.99), "p99_ms")
		})
	}
}
