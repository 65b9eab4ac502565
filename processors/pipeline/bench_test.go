package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchEvents returns n events: the tau-bench sample's sessions, copied
// under new session and event ids until n are reached (whole sessions, so
// every copy is evaluated on completion).
func benchEvents(b testing.TB, n int) []events.Envelope {
	b.Helper()
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var out []events.Envelope
	for c := 0; len(out) < n; c++ {
		for _, r := range recs {
			envs, err := taubench.Events(r)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range envs {
				e.SessionID = fmt.Sprintf("%s@%d", e.SessionID, c)
				e.CorrelationID = e.SessionID
				e.ID = fmt.Sprintf("%s@%d", e.ID, c)
				out = append(out, e)
			}
			if len(out) >= n {
				return out
			}
		}
	}
	return out
}

// rawThroughput produces the same records with a plain franz-go producer
// (batches of 500, acks=all, idempotent) to the same embedded broker
// configuration and consumes them back with a plain consumer: records/s
// from the first produce to the last record consumed.
func rawThroughput(b *testing.B, envs []events.Envelope) float64 {
	b.Helper()
	ctx := context.Background()
	brk, err := broker.Start(ctx, broker.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Close()
	recs := make([]*kgo.Record, len(envs))
	for i := range envs {
		if recs[i], err = events.Record(&envs[i]); err != nil {
			b.Fatal(err)
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics(string(events.TopicSessions)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(recs); i += 500 {
			if err := prod.ProduceSync(ctx, recs[i:min(i+500, len(recs))]...).FirstErr(); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	got := 0
	for got < len(recs) {
		fs := cons.PollFetches(ctx)
		got += fs.NumRecords()
	}
	wg.Wait()
	return float64(len(recs)) / time.Since(start).Seconds()
}

// timedProcessor records when each event reached the projection.
type timedProcessor struct {
	sessions.Processor
	mu   sync.Mutex
	seen map[string]time.Time
}

func (p *timedProcessor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if err := p.Processor.Apply(tx, env); err != nil {
		return err
	}
	p.mu.Lock()
	p.seen[env.ID] = time.Now()
	p.mu.Unlock()
	return nil
}

func (p *timedProcessor) at(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.seen[id]
	return t, ok
}

// chronicleThroughput publishes the events through Chronicle's producer
// (validation included, batches of 500) into a running pipeline and waits
// until the projection holds all of them and the outbox is relayed; then it
// measures produce→projection latency of single events sent one at a time.
func chronicleThroughput(b *testing.B, envs []events.Envelope, probes int) (evps float64, lat []time.Duration) {
	b.Helper()
	ctx := context.Background()
	tp := &timedProcessor{seen: map[string]time.Time{}}
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: b.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4, Processors: []processors.Processor{tp}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	for i := 0; i < len(envs); i += 500 {
		if err := p.Producer.Publish(ctx, envs[i:min(i+500, len(envs))]...); err != nil {
			b.Fatal(err)
		}
	}
	for {
		ok, _, err := p.CaughtUp(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	evps = float64(len(envs)) / time.Since(start).Seconds()

	for i := 0; i < probes; i++ {
		env, err := events.New(events.MinuteRecorded, "bench/latency", fmt.Sprintf("probe-%d", i), time.Unix(1700000000, 0),
			events.MinuteData{EventType: "message", Actor: "assistant", Data: []byte(`{"content":"probe"}`)})
		if err != nil {
			b.Fatal(err)
		}
		env.SessionID = fmt.Sprintf("latency-%d", i%16)
		t0 := time.Now()
		if err := p.Producer.Publish(ctx, env); err != nil {
			b.Fatal(err)
		}
		for {
			if t, ok := tp.at(env.ID); ok {
				lat = append(lat, t.Sub(t0))
				break
			}
			if time.Since(t0) > 10*time.Second {
				b.Fatalf("probe %d never reached the projection", i)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return evps, lat
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkIngestToProjection compares, in one run on the embedded broker,
// raw franz-go produce+consume throughput with Chronicle's
// ingest→projection throughput (validation, produce, consume on the Router,
// projection + offset + outbox batch in Pebble, relay of derived events),
// and reports produce→projection latency of single events.
func BenchmarkIngestToProjection(b *testing.B) {
	n := 20000
	if s := os.Getenv("CHRONICLE_BENCH_EVENTS"); s != "" {
		fmt.Sscan(s, &n)
	}
	envs := benchEvents(b, n)
	for i := 0; i < b.N; i++ {
		raw := rawThroughput(b, envs)
		chron, lat := chronicleThroughput(b, envs, 500)
		p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
		b.ReportMetric(raw, "raw_rec/s")
		b.ReportMetric(chron, "chronicle_ev/s")
		b.ReportMetric(chron/raw, "ratio")
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99_ms")
		fmt.Printf("\n%d events (tau-bench sessions), embedded broker, 4 partitions\n", len(envs))
		fmt.Printf("  raw franz-go produce+consume   %10.0f records/s\n", raw)
		fmt.Printf("  chronicle ingest→projection    %10.0f events/s\n", chron)
		fmt.Printf("  ratio                          %10.3f\n", chron/raw)
		fmt.Printf("  produce→projection latency     p50 %v  p99 %v  (%d single events)\n\n", p50.Round(time.Microsecond), p99.Round(time.Microsecond), len(lat))
	}
}
