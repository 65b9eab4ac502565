package processors_test

import (
	"context"
	"fmt"
	"sync"
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

// feedbackWorker handles memory.feedback.v1 only.
type feedbackWorker struct {
	mu  sync.Mutex
	got []string
	pos []string // processors.RecordPosition of each handled event
	ch  chan struct{}
}

func (*feedbackWorker) Name() string         { return "feedback-only" }
func (*feedbackWorker) Topic() events.Topic  { return events.TopicMemories }
func (*feedbackWorker) Types() []events.Type { return []events.Type{events.MemoryFeedback} }
func (w *feedbackWorker) Handle(ctx context.Context, env *events.Envelope) error {
	w.mu.Lock()
	w.got = append(w.got, string(env.Type)+" "+env.ID)
	pos, ok := processors.RecordPosition(ctx)
	w.pos = append(w.pos, fmt.Sprint(pos, ok))
	w.mu.Unlock()
	w.ch <- struct{}{}
	return nil
}

// A TypedWorker is handed only events of its types: a record of another
// type is skipped without being parsed, so even an invalid one is neither
// handed to it nor dead-lettered by it.
func TestTypedWorkerSkipsOtherTypes(t *testing.T) {
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
	w := &feedbackWorker{ch: make(chan struct{}, 4)}
	m := processors.NewMetrics(prometheus.NewRegistry())
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: b.Addrs(), Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Workers: []processors.Worker{w}, Metrics: m})
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
	rec := func(id, typ, data string) *kgo.Record {
		return &kgo.Record{Topic: string(events.TopicMemories), Key: []byte("org:default/m1"), Value: []byte(data),
			Headers: []kgo.RecordHeader{
				{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte(id)},
				{Key: "ce_source", Value: []byte("test")}, {Key: "ce_type", Value: []byte(typ)},
				{Key: "content-type", Value: []byte("application/json")},
			}}
	}
	// the first is invalid (memory.recorded.v1 needs far more): a plain
	// worker would dead-letter it
	if err := cl.ProduceSync(ctx,
		rec("a1", string(events.MemoryRecorded), `{"memory_id":"m1"}`),
		rec("b1", string(events.MemoryFeedback), `{"memory_id":"m1","signal":"task_completion","positive":false}`),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.ch:
	case <-ctx.Done():
		t.Fatal("memory.feedback.v1 never handed to the worker")
	}
	w.mu.Lock()
	got := append([]string(nil), w.got...)
	w.mu.Unlock()
	if len(got) != 1 || got[0] != string(events.MemoryFeedback)+" b1" {
		t.Fatalf("handled %v, want only the feedback b1", got)
	}
	// Handle's context carries the record's position (RecordPosition)
	w.mu.Lock()
	pos := append([]string(nil), w.pos...)
	w.mu.Unlock()
	if want := fmt.Sprint(projections.Position{Topic: string(events.TopicMemories), Partition: 0, Offset: 1}, true); len(pos) != 1 || pos[0] != want {
		t.Fatalf("RecordPosition in Handle: %v, want %s", pos, want)
	}
	// records of a partition are handled in order: a1 was settled before b1
	if n := testutil.ToFloat64(m.DeadLettered.WithLabelValues(w.Name())); n != 0 {
		t.Fatalf("the worker dead-lettered %v records; the skipped one must not be parsed", n)
	}
}
