package processors_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
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

// instance is one Chronicle instance of the test: a Runner with its own
// Pebble store, a member of the processors' consumer groups.
type instance struct {
	name   string
	store  *projections.Store
	runner *processors.Runner
	done   chan error
}

// sampleRecords is the embedded tau-bench sample, decoded once for the
// package's tests (taubench.SampleRecords decodes it anew, about 1.3 s
// under -race, and helpers here ran it per test). Shared: read the
// records, never change them (a copy of a Record is safe to change, its
// slices are not).
var sampleRecords = sync.OnceValues(taubench.SampleRecords)

func startInstance(t testing.TB, name string, brokers []string, procs []processors.Processor, opts ...kgo.Opt) *instance {
	t.Helper()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return runInstance(t, name, store, processors.RunnerConfig{Brokers: brokers, Store: store, Processors: procs,
		SubscriberOpts: append([]kgo.Opt{kgo.ClientID("instance-" + name)}, opts...)})
}

// runInstance starts a Runner of cfg on store, waits until it subscribed
// (at most 20 s) and stops it at cleanup.
func runInstance(t testing.TB, name string, store *projections.Store, cfg processors.RunnerConfig) *instance {
	t.Helper()
	r, err := processors.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{name: name, store: store, runner: r, done: make(chan error, 1)}
	go func() { in.done <- r.Run(context.Background()) }()
	select {
	case <-r.Running():
	case err := <-in.done:
		t.Fatalf("instance %s: %v", name, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("instance %s did not subscribe within 20 s", name)
	}
	t.Cleanup(in.stop)
	return in
}

// stop closes the runner (its members leave their groups) and the store.
func (in *instance) stop() {
	if in.runner == nil {
		return
	}
	_ = in.runner.Close()
	<-in.done
	_ = in.store.Close()
	in.runner = nil
}

func (in *instance) sessionCount(t testing.TB) int {
	t.Helper()
	l, _, err := sessions.List(in.store, "", 1<<20, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(l)
}

// started is where a session starts in the log.
type started struct {
	key    string
	offset int64
}

// missing explains which sessions started below the instance's stored
// position of their partition are not in its store ("" when none is
// missing): a position says every record before it was applied.
func (in *instance) missing(t *testing.T, starts map[int32][]started) string {
	t.Helper()
	l, _, err := sessions.List(in.store, "", 1<<20, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, v := range l {
		have[v.Key()] = true
	}
	var why string
	for p, ss := range starts {
		next, _ := in.store.NextOffset(sessions.Name, string(events.TopicSessions), p)
		var miss, below int
		for _, s := range ss {
			if s.offset < next {
				below++
				if !have[s.key] {
					miss++
				}
			}
		}
		if miss > 0 {
			why += fmt.Sprintf(" partition %d at offset %d: %d of the %d sessions started below it missing;", p, next, miss, below)
		}
	}
	if why != "" {
		return fmt.Sprintf("instance %s skipped records of partitions it was assigned:%s", in.name, why)
	}
	return ""
}

// sessionsByPartition reads the sessions topic up to end and returns the
// sessions started in each partition.
func sessionsByPartition(t *testing.T, brokers []string, end map[int32]int64) map[int32][]started {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(string(events.TopicSessions)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableFetchSessions())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[int32][]started{}
	next := map[int32]int64{}
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Offset >= end[r.Partition] {
				return
			}
			env, err := events.FromRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			if env.Type == events.SessionStarted {
				out[r.Partition] = append(out[r.Partition], started{string(r.Key), r.Offset})
			}
		})
		done = true
		for p, e := range end {
			if next[p] < e {
				done = false
			}
		}
	}
	return out
}

// assignment is the group's current assignment of the sessions topic's
// partitions by client id.
func assignment(t testing.TB, adm *kadm.Client, group string) map[string][]int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int32{}
	for _, m := range dg[group].Members {
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range c.Topics {
				if tp.Topic == string(events.TopicSessions) {
					out[m.ClientID] = append(out[m.ClientID], tp.Partitions...)
				}
			}
		}
	}
	return out
}

// waitFor polls cond every 50 ms until it returns "" (done) or within
// passes, then fails with cond's last explanation.
func waitFor(t testing.TB, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTwoInstancesSplitAndHandOver reproduces issue 15's "both instances
// stop processing" with two Runners (kafkapubsub subscribers, the sessions
// processor) on two Pebble stores against one embedded broker with 4
// partitions:
//
//  1. while split, the partitions together are processed to the end, and
//     each instance's Lag (its /healthz and chronicle_processor_lag) comes
//     down to 0: a partition the other instance owns is not this
//     instance's lag;
//  2. after one instance leaves gracefully, the other owns every partition
//     and its own store catches up on all of them: every session is in it.
func TestTwoInstancesSplitAndHandOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})
	const nSessions = 40
	publish := func(from, to int) {
		for _, r := range recs[from:to] {
			envs, err := taubench.Events(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := prod.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, nSessions/2)

	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ends := func() map[int32]int64 {
		l, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out
	}

	// A processes the first half alone, and its progress is committed to
	// the group, before B joins (as in the second run).
	procs := []processors.Processor{sessions.Processor{}}
	group := string(processors.ProcessorsGroup)
	a := startInstance(t, "A", brokers, procs)
	half := ends()
	waitFor(t, 20*time.Second, func() string {
		c, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err.Error()
		}
		for p, e := range half {
			if o, _ := c.Lookup(string(events.TopicSessions), p); o.At < e {
				return fmt.Sprintf("A's committed offset of partition %d is %d of %d", p, o.At, e)
			}
		}
		return ""
	})
	b := startInstance(t, "B", brokers, procs)
	publish(nSessions/2, nSessions)

	// 1. Split: the group gives each instance partitions, and each
	// processes its partitions to their end.
	end := ends()
	waitFor(t, 20*time.Second, func() string {
		owned := assignment(t, adm, group)
		if len(owned["instance-A"]) == 0 || len(owned["instance-B"]) == 0 {
			return fmt.Sprintf("no split of the partitions: %v", owned)
		}
		var behind string
		for _, in := range []*instance{a, b} {
			for _, p := range owned["instance-"+in.name] {
				if n, _ := in.store.NextOffset(sessions.Name, string(events.TopicSessions), p); n < end[p] {
					behind += fmt.Sprintf(" %s's store is at offset %d of %d on its partition %d;", in.name, n, end[p], p)
				}
			}
		}
		if behind != "" {
			return fmt.Sprintf("split %v, an owner's store does not reach the end of its partitions:%s", owned, behind)
		}
		return ""
	})
	// Neither skipped records of a partition it was assigned (those the
	// other instance processed before the assignment included).
	starts := sessionsByPartition(t, brokers, end)
	for _, in := range []*instance{a, b} {
		if why := in.missing(t, starts); why != "" {
			t.Fatal(why)
		}
	}
	t.Logf("split: A holds %d sessions, B %d", a.sessionCount(t), b.sessionCount(t))
	for _, in := range []*instance{a, b} {
		waitFor(t, 10*time.Second, func() string {
			l, err := processors.Lag(ctx, adm, in.store, procs)
			if err != nil {
				return err.Error()
			}
			if n := processors.TotalLag(l); n != 0 {
				return fmt.Sprintf("instance %s reports lag %d with every partition processed: %+v", in.name, n, l)
			}
			return ""
		})
	}

	// 2. B leaves: A takes over B's partitions and its own store catches
	// up on them (not only on what B had not processed).
	b.stop()
	waitFor(t, 20*time.Second, func() string {
		var behind string
		for p, e := range end {
			if na, _ := a.store.NextOffset(sessions.Name, string(events.TopicSessions), p); na < e {
				behind += fmt.Sprintf(" partition %d at %d of %d;", p, na, e)
			}
		}
		if behind != "" {
			return "after B left, A's store did not catch up:" + behind
		}
		return ""
	})
	if why := a.missing(t, starts); why != "" {
		t.Fatal("after B left: " + why)
	}
	if n := a.sessionCount(t); n != nSessions {
		t.Fatalf("after B left, A holds %d sessions, want %d", n, nSessions)
	}
}

// BenchmarkRunnerHandOverAfterLeave measures issue 15's "rebalance pause
// after a graceful leave" in Chronicle's path: two Runners (sessions
// processor, kafkapubsub subscribers, own Pebble stores) split the 4
// partitions of chronicle.sessions while tau-bench sessions keep arriving
// (one every 20 ms); then B closes (its members commit and leave) and the
// benchmark reports, from the start of B's Close,
//
//   - first-ms: until A has applied a record of every partition B owned
//     (processing again),
//   - caught-up-ms: until A's store reached, on each of them, the end
//     offset the partition had when B started leaving.
//
// A ran alone before B joined, so its store has positions on B's
// partitions and it resumes there: what it catches up on is what B applied
// meanwhile. One iteration is one leave; run with -benchtime=1x -count=N.
// The variants differ in the consumers' kgo.HeartbeatInterval (passed as
// RunnerConfig.SubscriberOpts), how soon A learns of the rebalance.
func BenchmarkRunnerHandOverAfterLeave(b *testing.B) {
	recs, err := sampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	for _, hb := range []time.Duration{3 * time.Second, 500 * time.Millisecond} {
		b.Run("heartbeat="+hb.String(), func(b *testing.B) {
			var first, caught time.Duration
			for i := 0; i < b.N; i++ {
				f, c := handOver(b, recs, hb)
				first += f
				caught += c
			}
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-ms")
			b.ReportMetric(float64(caught.Milliseconds())/float64(b.N), "caught-up-ms")
		})
	}
}

// handOver runs one leave of BenchmarkRunnerHandOverAfterLeave, at a
// random phase of A's heartbeat.
func handOver(b *testing.B, recs []taubench.Record, heartbeat time.Duration) (first, caught time.Duration) {
	opts := []kgo.Opt{kgo.HeartbeatInterval(heartbeat)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
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
	publish := func(r taubench.Record) {
		envs, err := taubench.Events(r)
		if err == nil {
			err = prod.Publish(ctx, envs...)
		}
		if err != nil && ctx.Err() == nil {
			b.Error(err)
		}
	}
	for _, r := range recs[:40] {
		publish(r)
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ends := func() map[int32]int64 {
		l, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
		if err != nil {
			b.Fatal(err)
		}
		out := map[int32]int64{}
		l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out
	}
	next := func(in *instance, p int32) int64 {
		n, _ := in.store.NextOffset(sessions.Name, string(events.TopicSessions), p)
		return n
	}

	procs := []processors.Processor{sessions.Processor{}}
	group := string(processors.ProcessorsGroup)
	a := startInstance(b, "A", brokers, procs, opts...)
	end := ends()
	waitFor(b, 30*time.Second, func() string {
		for p, e := range end {
			if next(a, p) < e {
				return "A alone did not catch up"
			}
		}
		return ""
	})
	bi := startInstance(b, "B", brokers, procs, opts...)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // sessions keep arriving
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for _, r := range recs[40:] {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			publish(r)
		}
	}()
	defer func() { close(stop); <-done }()
	var bParts []int32
	waitFor(b, 30*time.Second, func() string {
		owned := assignment(b, adm, group)
		if len(owned["instance-A"]) == 0 || len(owned["instance-B"]) == 0 {
			return fmt.Sprintf("no split: %v", owned)
		}
		for _, p := range owned["instance-B"] {
			if next(bi, p) == 0 {
				return "B has not started its partitions"
			}
		}
		bParts = owned["instance-B"]
		return ""
	})
	time.Sleep(time.Second + rand.N(heartbeat))

	at := map[int32]int64{}
	for _, p := range bParts {
		at[p] = next(a, p)
	}
	start := time.Now()
	leaveEnd := ends()
	bi.stop()
	deadline := time.Now().Add(60 * time.Second)
	for first == 0 || caught == 0 {
		moved, upToDate := true, true
		for _, p := range bParts {
			n := next(a, p)
			moved = moved && n > at[p]
			upToDate = upToDate && n >= leaveEnd[p]
		}
		if moved && first == 0 {
			first = time.Since(start)
		}
		if upToDate && caught == 0 {
			caught = time.Since(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("A did not take over B's partitions %v within 60 s", bParts)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return first, caught
}

// sampleLog starts an embedded broker with cfg (its DataDir a temporary
// directory, listening on a free loopback port), and returns its
// addresses, the bundled tau-bench records and a producer to it; broker and
// producer are closed when the test ends.
func sampleLog(ctx context.Context, t *testing.T, cfg broker.Config) ([]string, []taubench.Record, *events.Producer) {
	t.Helper()
	brokers, prod := brokerAndProducer(ctx, t, cfg)
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	return brokers, recs, prod
}

// publishRecords publishes the events of recs (tau-bench records) through
// prod, in order.
func publishRecords(ctx context.Context, t testing.TB, prod *events.Producer, recs []taubench.Record) {
	t.Helper()
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
}

// runRelay relays in's outbox through prod until the returned stop is
// called (which waits for the relay to end).
func runRelay(ctx context.Context, in *instance, prod *events.Producer) (stop func()) {
	relayCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&processors.Relay{Store: in.store, Producer: prod}).Run(relayCtx)
	}()
	return func() { cancel(); <-done }
}

// brokerAndProducer starts an embedded broker of cfg on a free loopback
// port logging in a temporary directory, and a producer for it; both
// close at cleanup.
func brokerAndProducer(ctx context.Context, t testing.TB, cfg broker.Config) ([]string, *events.Producer) {
	t.Helper()
	cfg.DataDir, cfg.Listen = t.TempDir(), "127.0.0.1:0"
	brk, err := broker.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brk.Close)
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return brk.Addrs(), prod
}
