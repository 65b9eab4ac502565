package deadletter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// failingWorker refuses every event.
type failingWorker struct{}

func (failingWorker) Name() string        { return "failing" }
func (failingWorker) Topic() events.Topic { return events.TopicMemories }
func (failingWorker) Handle(context.Context, *events.Envelope) error {
	return errors.New("model unreachable")
}

// A worker's failure is counted in chronicle_dead_letter_events_total
// (Watermill's router metrics count it as a success), and its letter —
// the event converted to structured mode next to the original binary-mode
// ce_ headers — is listed and restored as the binary-mode event it was.
func TestWorkerLetter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := processors.NewMetrics(prometheus.NewRegistry())
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: b.Addrs(), Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Workers: []processors.Worker{failingWorker{}}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { _ = r.Close(); <-done }()
	select {
	case <-r.Running():
	case <-ctx.Done():
		t.Fatal("runner did not start")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec := &kgo.Record{Topic: string(events.TopicMemories), Key: []byte("org:default/m1"),
		Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`),
		Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b1")},
			{Key: "ce_source", Value: []byte("kcat")}, {Key: "ce_type", Value: []byte("memory.feedback.v1")},
			{Key: "content-type", Value: []byte("application/json")},
		}}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ls := waitLetters(ctx, t, b.Addrs(), 1)
	l := ls[0]
	if l.Handler != "failing@"+string(events.TopicMemories) || l.Reason != "model unreachable" || l.EventID != "b1" || l.Key != "org:default/m1" || l.ID != "chronicle.memories:0:0" {
		t.Fatalf("letter %+v", l)
	}
	o := l.Original()
	for _, h := range o.Headers {
		if h.Key != "content-type" || string(h.Value) != events.ContentTypeCloudEvents {
			t.Fatalf("restored header %s=%s", h.Key, h.Value)
		}
	}
	env, err := events.FromRecord(o)
	if err != nil || env.ID != "b1" || env.Source != "kcat" {
		t.Fatalf("restored record: %+v %v", env, err)
	}
	// the worker counts the letter once its transaction is committed and
	// the group's offset confirmed, a round trip after the letter is
	// visible to the read above (a CI run read 0 in between)
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.DeadLettered.WithLabelValues("failing")) != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := testutil.ToFloat64(m.DeadLettered.WithLabelValues("failing")); got != 1 {
		t.Fatalf("chronicle_dead_letter_events_total{processor=failing} = %v, want 1", got)
	}
}
