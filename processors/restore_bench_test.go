package processors_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkRestoreVsReplay measures what failover costs today (issue 15):
// with no standby replica, a new owner restores a partition by replaying
// it from offset 0 through the live engine. On one log (the 200 tau-bench
// sessions on 4 partitions of chronicle.sessions, embedded broker) it
// times, for the sessions processor into an empty store:
//
//   - replay: processors.Replay (chronicle replay), records/s;
//   - restore: a new Runner joining the group alone, from NewRunner until
//     its store reached every partition's end: restore-records/s over the
//     whole time, join-ms until it had its assignment.
//
// Run: go test -run '^$' -bench RestoreVsReplay -benchtime=1x -count=3 ./processors/
func BenchmarkRestoreVsReplay(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Close()
	brokers := brk.Addrs()
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			b.Fatal(err)
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			b.Fatal(err)
		}
	}
	prod.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	l, err := kadm.NewClient(admCl).ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		b.Fatal(err)
	}
	end := map[int32]int64{}
	var total int64
	l.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset; total += o.Offset })
	procs := []processors.Processor{sessions.Processor{}}

	b.Run("replay", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			store, err := projections.Open(b.TempDir(), projections.Options{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: procs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Records)/time.Since(start).Seconds(), "records/s")
			store.Close()
		}
	})
	b.Run("restore", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			store, err := projections.Open(b.TempDir(), projections.Options{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			r, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: store, Processors: procs})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(context.Background()) }()
			<-r.Running()
			joined := time.Since(start)
			for {
				caught := true
				for p, e := range end {
					if n, _ := store.NextOffset(sessions.Name, string(events.TopicSessions), p); n < e {
						caught = false
					}
				}
				if caught {
					break
				}
				if time.Since(start) > 2*time.Minute {
					b.Fatal("restore did not finish within 2 minutes")
				}
				time.Sleep(2 * time.Millisecond)
			}
			took := time.Since(start)
			b.ReportMetric(float64(total)/took.Seconds(), "restore-records/s")
			b.ReportMetric(float64(joined.Milliseconds()), "join-ms")
			_ = r.Close()
			<-done
			store.Close()
		}
	})
	b.ReportMetric(float64(total), "records")
}
