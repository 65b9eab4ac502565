package processors_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// slowHandlerWorker's first Handle ignores its context for 12 s, beyond
// the router's 10 s CloseTimeout (an LLM call, a store read: anything that
// does not stop at once).
type slowHandlerWorker struct {
	started chan struct{}
	once    sync.Once
	done    atomic.Bool
}

func (w *slowHandlerWorker) Name() string        { return "slow-handler" }
func (w *slowHandlerWorker) Topic() events.Topic { return events.TopicSessions }
func (w *slowHandlerWorker) Handle(ctx context.Context, env *events.Envelope) error {
	first := false
	w.once.Do(func() { first = true; close(w.started) })
	if first {
		time.Sleep(12 * time.Second)
		w.done.Store(true)
	}
	return nil
}

// TestRunWaitsForARunningHandler: Watermill's router gives up on a
// handler after its CloseTimeout (10 s); Run used to return then, with
// Unfinished empty, and Pipeline.Close closed the producer, the broker and
// the store under the handler still running (found by a review). Run now
// waits for it, and Unfinished names the workers meanwhile.
func TestRunWaitsForARunningHandler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 1})
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := &slowHandlerWorker{started: make(chan struct{})}
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Workers: []processors.Worker{w}, WorkersAtLeastOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	publishRecords(ctx, t, prod, recs[:2])
	select {
	case <-w.started:
	case <-ctx.Done():
		t.Fatal("the worker got no message")
	}
	t0 := time.Now()
	stop()
	time.Sleep(11 * time.Second) // past the router's CloseTimeout
	if u := r.Unfinished(); !w.done.Load() && (len(u) == 0 || !strings.HasPrefix(u[len(u)-1], "router/workers")) {
		t.Errorf("11 s after the stop, with the worker's handler still running, Unfinished() = %v: want the router/workers named", u)
	}
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Run did not return")
	}
	t.Logf("Run returned %s after the stop; handler finished: %v", time.Since(t0).Round(time.Millisecond), w.done.Load())
	if !w.done.Load() {
		t.Errorf("Run returned with the worker's handler still running")
	}
}
