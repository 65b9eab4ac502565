package processors_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// echoWorker answers every memory.feedback.v1 of source "test" with one
// memory.feedback.v1 of its own, whose id is derived from the cause
// (events.Derive), as Chronicle's workers do. afterPublish, when set, runs
// once after the first publish returned.
type echoWorker struct {
	prod         *events.Producer
	afterPublish func()
	once         sync.Once
}

func (*echoWorker) Name() string        { return "echo" }
func (*echoWorker) Topic() events.Topic { return events.TopicMemories }
func (w *echoWorker) Handle(ctx context.Context, env *events.Envelope) error {
	if env.Source != "test" {
		return nil // its own outputs
	}
	out, err := events.Derive(env, "chronicle/echo", events.MemoryFeedback, 0, map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": true})
	if err != nil {
		return err
	}
	out.Scope = env.Scope
	if err := w.prod.PublishDerived(ctx, out); err != nil {
		return err
	}
	if w.afterPublish != nil {
		w.once.Do(w.afterPublish)
	}
	return nil
}

// endTxnKiller is a dialer whose connections run kill instead of writing
// the first EndTxn request (Kafka API key 26; franz-go writes a request,
// size prefix and header included, in one Write): the process dies after
// its transaction's records were acknowledged and before the commit, every
// time. (A kill from a produce hook raced with the commit: on a loaded
// machine the commit sometimes went first, 1 run in about 18.)
type endTxnKiller struct {
	dial func(ctx context.Context, network, host string) (net.Conn, error)
	kill func()
}

func (k endTxnKiller) dialer(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := k.dial(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return endTxnConn{c, k.kill}, nil
}

type endTxnConn struct {
	net.Conn
	kill func()
}

const apiKeyEndTxn = 26

func (c endTxnConn) Write(b []byte) (int, error) {
	if len(b) >= 6 && binary.BigEndian.Uint16(b[4:6]) == apiKeyEndTxn {
		c.kill()
		return 0, errors.New("killed before the transaction's commit")
	}
	return c.Conn.Write(b)
}

// TestWorkerOutputsWrittenOnce: instance A's worker handles the first of 5
// events and is killed (every connection cut: a SIGKILL as the broker
// sees it) after its output reached the broker and before the consumed
// offset was committed. Instance B takes the worker's partition over after
// the session timeout and handles the events from the group's committed
// offset, the first one again. With the Runner's transactions (default),
// A's output was in a transaction B's takeover aborted: each output id is
// in the log once for read_committed consumers, and A's copy is an aborted
// record. At least once (RunnerConfig.WorkersAtLeastOnce, the behaviour
// before), the same kill leaves the first output in the log twice: the
// check can fail.
func TestWorkerOutputsWrittenOnce(t *testing.T) {
	t.Run("transactional", func(t *testing.T) { workerKilledBetweenProduceAndCommit(t, false) })
	t.Run("at-least-once", func(t *testing.T) { workerKilledBetweenProduceAndCommit(t, true) })
}

func workerKilledBetweenProduceAndCommit(t *testing.T, atLeastOnce bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, prod := brokerAndProducer(ctx, t, broker.Config{Partitions: 1, GroupMinSessionTimeout: time.Second})

	var killed atomic.Bool
	ks := &killSwitch{}
	kill := func() { killed.Store(true); ks.kill() }
	start := func(name string, w *echoWorker, ks *killSwitch, producerOpts ...kgo.Opt) *instance {
		return onceInstance(t, brokers, name, processors.RunnerConfig{Workers: []processors.Worker{w}, WorkersAtLeastOnce: atLeastOnce}, ks, producerOpts...)
	}
	a := &echoWorker{prod: prod}
	var producerOpts []kgo.Opt
	if atLeastOnce {
		a.afterPublish = kill // the output acknowledged, the offset not committed
	} else {
		// the output in the open transaction
		producerOpts = append(producerOpts, kgo.Dialer(endTxnKiller{dial: ks.dial, kill: kill}.dialer))
	}
	start("A", a, ks, producerOpts...)

	const n = 5
	publishKilledAfterFirst(ctx, t, prod, n, &killed, "A's worker has not written its first output")
	start("B", &echoWorker{prod: prod}, nil)

	want := map[string]bool{}
	for i := range n {
		want[string(events.TopicMemories)+" "+events.DerivedID("test", fmt.Sprintf("in-%d", i), events.MemoryFeedback, 0)] = true
	}
	var ids map[string]int
	var aborted int
	waitFor(t, 30*time.Second, func() string {
		ids, aborted = topicCounts(t, brokers, string(events.TopicMemories))
		for id := range want {
			if ids[id] == 0 {
				return fmt.Sprintf("output %s not in the log yet", id)
			}
		}
		return ""
	})
	copies := 0
	for id := range want {
		copies += ids[id]
		if !atLeastOnce && ids[id] != 1 {
			t.Errorf("output %s written %d times", id, ids[id])
		}
	}
	t.Logf("%d outputs: %d copies for read_committed consumers, %d aborted records", n, copies, aborted)
	switch {
	case atLeastOnce && copies == n:
		t.Errorf("at least once, the killed worker's output was not written twice: the test does not catch a repeat")
	case !atLeastOnce && aborted == 0:
		t.Errorf("no aborted record: A was not killed inside its transaction")
	}
}

// BenchmarkWorkerOutputs measures what the workers' transactions cost: one
// Runner with the echo worker (no model call: the worst case, where the
// transaction's round trips are all of the work), 300 events published at
// once, timed until the 300 outputs are readable (read_committed);
// "transactional" (the default) side by side with "at-least-once"
// (RunnerConfig.WorkersAtLeastOnce). Reports outputs/s.
func BenchmarkWorkerOutputs(b *testing.B) {
	for _, mode := range []struct {
		name        string
		atLeastOnce bool
	}{{"transactional", false}, {"at-least-once", true}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				d := workerOutputsRun(b, mode.atLeastOnce, 300)
				b.ReportMetric(300/d.Seconds(), "outputs/s")
			}
		})
	}
}

func workerOutputsRun(b *testing.B, atLeastOnce bool, n int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Close()
	brokers := brk.Addrs()
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	store, err := projections.Open(b.TempDir(), projections.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Workers: []processors.Worker{&echoWorker{prod: prod}}, WorkersAtLeastOnce: atLeastOnce})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { _ = r.Close(); <-done }()
	<-r.Running()
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(string(events.TopicMemories)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DisableFetchSessions())
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	envs := make([]events.Envelope, n)
	for i := range envs {
		if envs[i], err = events.New(events.MemoryFeedback, "test", fmt.Sprintf("in-%d", i), time.Unix(1700000000, 0), map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": false}); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	start := time.Now()
	if err := prod.Publish(ctx, envs...); err != nil {
		b.Fatal(err)
	}
	outs := 0
	for outs < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("%d of %d outputs", outs, n)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if env, err := events.FromRecord(rec); err == nil && env.Source == "chronicle/echo" {
				outs++
			}
		})
	}
	d := time.Since(start)
	b.StopTimer()
	return d
}

// A worker fenced on a partition its group still assigns to it (another
// producer initialised the partition's transactional id, as the previous
// generation's owner does when a paused instance gets its partition back
// without a new assignment) confirms with the group that it owns the
// partition, takes the id back and writes every output once. (Without
// the look at the group its events would wait for good.)
func TestWorkerReclaimsPartitionTheGroupConfirms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, prod := brokerAndProducer(ctx, t, broker.Config{Partitions: 1})
	w := &echoWorker{prod: prod}
	logs := watermill.NewCaptureLogger()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}, Workers: []processors.Worker{w}, Logger: logs})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { _ = r.Close(); <-done }()
	<-r.Running()
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			env, err := events.New(events.MemoryFeedback, "test", fmt.Sprintf("in-%d", i), time.Unix(1700000000, 0), map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": false})
			if err != nil {
				t.Fatal(err)
			}
			if err := prod.Publish(ctx, env); err != nil {
				t.Fatal(err)
			}
		}
	}
	outputs := func(n int) func() string {
		return func() string {
			ids, _ := topicCounts(t, brokers, string(events.TopicMemories))
			for i := range n {
				if ids[string(events.TopicMemories)+" "+events.DerivedID("test", fmt.Sprintf("in-%d", i), events.MemoryFeedback, 0)] == 0 {
					return fmt.Sprintf("output of in-%d not in the log", i)
				}
			}
			return ""
		}
	}
	publish(0, 3)
	waitFor(t, 20*time.Second, outputs(3))
	thief, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(processors.WorkerTransactionalID(w, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := thief.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	thief.Close()
	publish(3, 6)
	waitFor(t, 30*time.Second, outputs(6))
	ids, _ := topicCounts(t, brokers, string(events.TopicMemories))
	for i := range 6 {
		id := string(events.TopicMemories) + " " + events.DerivedID("test", fmt.Sprintf("in-%d", i), events.MemoryFeedback, 0)
		if ids[id] != 1 {
			t.Errorf("output of in-%d written %d times", i, ids[id])
		}
	}
	fencedLogs := 0
	for _, m := range logs.Captured()[watermill.InfoLogLevel] {
		if strings.HasPrefix(m.Msg, "worker: fenced on a partition") {
			fencedLogs++
		}
	}
	if fencedLogs == 0 {
		t.Error("the worker was never fenced: the test proves nothing")
	}
	t.Logf("fenced %d times, then the partition taken back: 6 outputs, each once", fencedLogs)
}

// stepWorker is a StreamingWorker: for every memory.feedback.v1 of source
// "test" it writes two steps (memory.feedback.v1 derived from the cause,
// numbers 0 and 1) with a pause between them, as the tree-search
// ResumeWorker writes a search step by step. A step it saw acknowledged
// is not written again when the event is handed again (the ResumeWorker
// finds the search moved on). between, when set, runs after step 0 of
// the first event.
type stepWorker struct {
	prod    *events.Producer
	between func()
	once    sync.Once
	mu      sync.Mutex
	written map[string]bool
	errs    chan error // every Publish error of step 1
}

func (*stepWorker) Name() string         { return "steps" }
func (*stepWorker) Topic() events.Topic  { return events.TopicMemories }
func (*stepWorker) StreamsOutputs() bool { return true }
func (w *stepWorker) Handle(ctx context.Context, env *events.Envelope) error {
	if env.Source != "test" {
		return nil
	}
	for n := range 2 {
		out, err := events.Derive(env, "chronicle/steps", events.MemoryFeedback, n, map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": true})
		if err != nil {
			return err
		}
		out.Scope = env.Scope
		w.mu.Lock()
		done := w.written[out.ID]
		w.mu.Unlock()
		if !done {
			err := w.prod.PublishDerived(ctx, out)
			if n == 1 && err != nil {
				w.errs <- err
			}
			if err != nil {
				return err
			}
			w.mu.Lock()
			w.written[out.ID] = true
			w.mu.Unlock()
		}
		if n == 0 && w.between != nil {
			w.once.Do(w.between)
		}
	}
	return nil
}

// A StreamingWorker that lost its partition cannot write its next step
// (no zombie writes): instance A's worker wrote step 0 of an event when
// another member initialised the partition's transactional id (as a new
// owner does at assignment, while A was paused); A's step 1 is refused by
// the broker, is not in the log for read_committed consumers, and the
// event is not dead-lettered. When the group confirms that A still owns
// the partition, A takes the id back and writes step 1, once. Without
// the transactions (RunnerConfig.WorkersAtLeastOnce, what a streaming
// worker had before), the zombie's step 1 is written: the check can fail.
func TestStreamingWorkerFenced(t *testing.T) {
	t.Run("fenced", func(t *testing.T) { streamingWorkerFenced(t, false) })
	t.Run("at-least-once", func(t *testing.T) { streamingWorkerFenced(t, true) })
}

func streamingWorkerFenced(t *testing.T, atLeastOnce bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, prod := brokerAndProducer(ctx, t, broker.Config{Partitions: 1})
	step := func(n int) string {
		return string(events.TopicMemories) + " " + events.DerivedID("test", "in-0", events.MemoryFeedback, n)
	}
	w := &stepWorker{prod: prod, written: map[string]bool{}, errs: make(chan error, 10)}
	w.between = func() {
		// step 0 is in the log; a new owner takes the id over
		waitFor(t, 20*time.Second, func() string {
			if ids, _ := topicCounts(t, brokers, string(events.TopicMemories)); ids[step(0)] == 0 {
				return "step 0 not in the log"
			}
			return ""
		})
		thief, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(processors.WorkerTransactionalID(w, 0)))
		if err != nil {
			t.Error(err)
			return
		}
		if _, _, err := thief.ProducerID(ctx); err != nil {
			t.Error(err)
		}
		thief.Close()
	}
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Workers: []processors.Worker{w}, WorkersAtLeastOnce: atLeastOnce, Logger: watermill.NopLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { _ = r.Close(); <-done }()
	<-r.Running()
	env, err := events.New(events.MemoryFeedback, "test", "in-0", time.Unix(1700000000, 0), map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": false})
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Publish(ctx, env); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		if ids, _ := topicCounts(t, brokers, string(events.TopicMemories)); ids[step(1)] == 0 {
			return "step 1 not in the log"
		}
		return ""
	})
	ids, aborted := topicCounts(t, brokers, string(events.TopicMemories), string(events.TopicDeadLetter))
	refused := len(w.errs)
	t.Logf("step 0 written %d times, step 1 %d times; %d refused writes of step 1, %d aborted records", ids[step(0)], ids[step(1)], refused, aborted)
	for n := range 2 {
		if ids[step(n)] != 1 {
			t.Errorf("step %d written %d times", n, ids[step(n)])
		}
	}
	for id, c := range ids {
		if strings.HasPrefix(id, string(events.TopicDeadLetter)) {
			t.Errorf("dead-lettered: %s (%d)", id, c)
		}
	}
	switch {
	case !atLeastOnce && refused == 0:
		t.Errorf("the zombie's step 1 was not refused: it wrote after another member took the partition's id over")
	case atLeastOnce && refused != 0:
		t.Errorf("at least once, step 1 was refused: %v", <-w.errs)
	}
}

// failWorker fails every memory.feedback.v1 of source "test", as a worker
// whose model call fails for good does.
type failWorker struct{}

func (failWorker) Name() string        { return "fail" }
func (failWorker) Topic() events.Topic { return events.TopicMemories }
func (failWorker) Handle(_ context.Context, env *events.Envelope) error {
	if env.Source != "test" {
		return nil
	}
	return fmt.Errorf("model refused %s", env.ID)
}

// A worker's dead letters are written once, in a transaction with the
// consumed offset: instance A's worker fails the first of 5 events and is
// killed after the broker acknowledged the dead letter and before the
// transaction's commit; B takes the partition over and handles the 5
// events from the group's committed offset, the first one again. The
// dead-letter topic holds each event once for read_committed consumers,
// A's copy an aborted record, each with the reason; the dead-letter
// metric counts B's five.
func TestWorkerDeadLettersWrittenOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, prod := brokerAndProducer(ctx, t, broker.Config{Partitions: 1, GroupMinSessionTimeout: time.Second})
	pair := &killedPair{brokers: brokers, workers: []processors.Worker{failWorker{}}, metrics: processors.NewMetrics(prometheus.NewRegistry())}
	metrics := pair.metrics
	pair.startA(t)
	const n = 5
	publishKilledAfterFirst(ctx, t, prod, n, &pair.killed, "A's worker has not written its first dead letter")
	pair.startB(t)
	// B's dead letters committed (its takeover aborted A's transaction):
	// the topic reads to its end for read_committed consumers
	waitFor(t, 30*time.Second, func() string {
		if got := testutil.ToFloat64(metrics.DeadLettered.WithLabelValues("fail")); got < n {
			return fmt.Sprintf("B dead-lettered %v of %d", got, n)
		}
		return ""
	})
	dl := string(events.TopicDeadLetter)
	ids, aborted := topicCounts(t, brokers, dl)
	for i := range n {
		if c := ids[dl+" "+fmt.Sprintf("in-%d", i)]; c != 1 {
			t.Errorf("in-%d dead-lettered %d times", i, c)
		}
	}
	if aborted == 0 {
		t.Errorf("no aborted record: A was not killed inside its transaction")
	}
	if got := testutil.ToFloat64(metrics.DeadLettered.WithLabelValues("fail")); got != n {
		t.Errorf("dead-letter metric %v, want %d", got, n)
	}
	t.Logf("%d events: dead letters %v, %d aborted records", n, ids, aborted)
}

// killedPair is the two instances of a dead-letter test, both running
// workers: A, whose connections are all cut at its first EndTxn request
// (killed is set then: it died inside its transaction), and B, which takes
// A's partitions over and counts in metrics.
type killedPair struct {
	brokers []string
	workers []processors.Worker
	metrics *processors.Metrics
	killed  atomic.Bool
	ks      killSwitch
}

func (k *killedPair) startA(t *testing.T) *instance {
	t.Helper()
	kill := func() { k.killed.Store(true); k.ks.kill() }
	return onceInstance(t, k.brokers, "A", processors.RunnerConfig{Workers: k.workers}, &k.ks, kgo.Dialer(endTxnKiller{dial: k.ks.dial, kill: kill}.dialer))
}

func (k *killedPair) startB(t *testing.T) *instance {
	t.Helper()
	return onceInstance(t, k.brokers, "B", processors.RunnerConfig{Workers: k.workers, Metrics: k.metrics}, nil)
}

// onceInstance runs an instance with the sessions processor and cfg's
// workers (Brokers, Store, Processors and the options set here), with a
// 1 s session timeout; every connection goes through ks when set (its
// kill cuts them all, as a SIGKILL looks to the broker). producerOpts are
// the workers' transactional producers' extra options (a Dialer among
// them wins over ks's).
func onceInstance(t *testing.T, brokers []string, name string, cfg processors.RunnerConfig, ks *killSwitch, producerOpts ...kgo.Opt) *instance {
	t.Helper()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.ClientID("instance-" + name), kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(150 * time.Millisecond), kgo.RebalanceTimeout(time.Second)}
	if ks != nil {
		opts = append(opts, kgo.Dialer(ks.dial))
		producerOpts = append([]kgo.Opt{kgo.Dialer(ks.dial)}, producerOpts...) // a Dialer given by the caller comes later and wins
	}
	cfg.Brokers, cfg.Store, cfg.Processors = brokers, store, []processors.Processor{sessions.Processor{}}
	cfg.SubscriberOpts, cfg.WorkerProducerOpts = opts, producerOpts
	return runInstance(t, name, store, cfg)
}

// publishKilledAfterFirst publishes n memory.feedback.v1 events of source
// "test" (ids in-0 …), waiting after the first until killed is set (why:
// what the failure says).
func publishKilledAfterFirst(ctx context.Context, t *testing.T, prod *events.Producer, n int, killed *atomic.Bool, why string) {
	t.Helper()
	for i := range n {
		env, err := events.New(events.MemoryFeedback, "test", fmt.Sprintf("in-%d", i), time.Unix(1700000000, 0), map[string]any{"memory_id": "m1", "signal": "task_completion", "positive": false})
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			waitFor(t, 20*time.Second, func() string {
				if !killed.Load() {
					return why
				}
				return ""
			})
		}
	}
}

// sessionsWorker reads chronicle.sessions, which the engine reads too.
type sessionsWorker struct{}

func (sessionsWorker) Name() string                                   { return "sessions-reader" }
func (sessionsWorker) Topic() events.Topic                            { return events.TopicSessions }
func (sessionsWorker) Handle(context.Context, *events.Envelope) error { return nil }

// A record a worker cannot parse is dead-lettered once: by the worker, in
// a transaction with the consumed offset, when no processor of the engine
// reads its topic (A is killed inside that transaction and B writes the
// letter again: one committed letter, the metric at 1); by the engine
// alone when a processor reads the topic (the worker on chronicle.sessions
// skips it). Before, the worker's poison queue wrote it outside any
// transaction, and a second time next to the engine's.
func TestWorkerUnparseableDeadLetteredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, _ := brokerAndProducer(ctx, t, broker.Config{Partitions: 1, GroupMinSessionTimeout: time.Second})
	pair := &killedPair{brokers: brokers, workers: []processors.Worker{failWorker{}, sessionsWorker{}}, metrics: processors.NewMetrics(prometheus.NewRegistry())}
	metrics := pair.metrics
	pair.startA(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	broken := []byte(`{"specversion":"1.0","id":"broken","source":"test","type":"memory.feedback.v1"}`) // no data
	for _, topic := range []events.Topic{events.TopicMemories, events.TopicSessions} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: string(topic), Key: []byte("k"), Value: broken}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, func() string {
		if !pair.killed.Load() {
			return "A's worker has not written the broken record's dead letter"
		}
		return ""
	})
	b := pair.startB(t)
	waitFor(t, 30*time.Second, func() string {
		if got := testutil.ToFloat64(metrics.DeadLettered.WithLabelValues("fail")); got < 1 {
			return "B has not dead-lettered the broken record"
		}
		return ""
	})
	// the worker on chronicle.sessions handles the next record there: the
	// broken one is behind it
	ok, err := events.New(events.SessionStarted, "test", "s-1", time.Unix(1700000000, 0), map[string]any{"original_task": "t", "success_criteria": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	ok.SessionID = "s-1"
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.Publish(ctx, ok); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		lag, err := processors.WorkerLag(ctx, kadm.NewClient(cl), []processors.Worker{sessionsWorker{}})
		if err != nil {
			return err.Error()
		}
		if lag > 0 {
			return fmt.Sprintf("the sessions worker lags by %d", lag)
		}
		return ""
	})
	letters, err := deadletter.List(ctx, brokers)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]string{}
	for _, l := range letters {
		byID[l.ID] = append(byID[l.ID], l.Handler)
	}
	if h := byID[string(events.TopicMemories)+":0:0"]; len(h) != 1 || h[0] != "fail@"+string(events.TopicMemories) {
		t.Errorf("the broken record on %s: letters by %v, want one by the worker", events.TopicMemories, h)
	}
	// no relay runs here: the engine's letter is in B's outbox (B restored
	// the partition from offset 0), and the log has none of the worker's
	if h := byID[string(events.TopicSessions)+":0:0"]; len(h) != 0 {
		t.Errorf("the broken record on %s: letters by %v in the log, want none (the engine's is in the outbox)", events.TopicSessions, h)
	}
	// B's engine applies chronicle.sessions on its own clock, not the
	// worker's: wait for its letter (counted at once, it was 0 in a CI run
	// under the race detector, 2026-12-01)
	waitFor(t, 30*time.Second, func() string {
		rows, err := b.store.PendingOutbox(1000)
		if err != nil {
			return err.Error()
		}
		engine := 0
		for _, r := range rows {
			if r.Topic == string(events.TopicDeadLetter) && r.Source != nil && r.Source.Topic == string(events.TopicSessions) && r.Source.Offset == 0 {
				engine++
			}
		}
		if engine != 1 {
			return fmt.Sprintf("the engine's letters of the broken record on %s: %d, want 1", events.TopicSessions, engine)
		}
		return ""
	})
	if got := testutil.ToFloat64(metrics.DeadLettered.WithLabelValues("fail")); got != 1 {
		t.Errorf("dead-letter metric %v, want 1", got)
	}
	if got := testutil.ToFloat64(metrics.DeadLettered.WithLabelValues("sessions-reader")); got != 0 {
		t.Errorf("the sessions worker's dead-letter metric %v, want 0", got)
	}
	_, aborted := topicCountsRaw(t, brokers, string(events.TopicDeadLetter))
	if aborted == 0 {
		t.Errorf("no aborted record: A was not killed inside its transaction")
	}
	t.Logf("letters %v, %d aborted", byID, aborted)
}
