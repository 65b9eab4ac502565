package broker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// startBroker runs the embedded broker on a free loopback port with every
// Chronicle topic at 4 partitions.
func startBroker(tb testing.TB) []string {
	tb.Helper()
	b, err := broker.Start(context.Background(), broker.Config{DataDir: tb.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	return b.Addrs()
}

// member is one plain franz-go group member (cooperative-sticky, franz-go's
// default balancer) that records what it consumed.
type member struct {
	name string
	cl   *kgo.Client
	done chan struct{}

	mu    sync.Mutex
	seen  map[string]int          // "partition/offset" → deliveries
	first map[int32]time.Time     // first record per partition
	last  map[int32]time.Time     // latest record per partition
	owned map[int32]bool          // current assignment
	gaps  map[int32]time.Duration // longest pause between records per partition
}

func newMember(tb testing.TB, name string, brokers []string, group string, topic events.Topic, opts ...kgo.Opt) *member {
	tb.Helper()
	m := &member{name: name, done: make(chan struct{}), seen: map[string]int{}, first: map[int32]time.Time{},
		last: map[int32]time.Time{}, owned: map[int32]bool{}, gaps: map[int32]time.Duration{}}
	all := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(string(topic)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.DisableFetchSessions(), // as kafkapubsub: avoids a race in franz-go's Close
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[string(topic)] {
				m.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[string(topic)] {
				delete(m.owned, p)
			}
		}),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		tb.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			now := time.Now()
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				m.seen[strconv.Itoa(int(r.Partition))+"/"+strconv.FormatInt(r.Offset, 10)]++
				if _, ok := m.first[r.Partition]; !ok {
					m.first[r.Partition] = now
				}
				if l, ok := m.last[r.Partition]; ok && now.Sub(l) > m.gaps[r.Partition] {
					m.gaps[r.Partition] = now.Sub(l)
				}
				m.last[r.Partition] = now
			})
			m.mu.Unlock()
		}
	}()
	tb.Cleanup(m.close)
	return m
}

// close leaves the group gracefully (franz-go commits and sends LeaveGroup).
func (m *member) close() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cl.Close()
	<-m.done
}

func (m *member) assignment() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// produce writes n records spread over the topic's partitions (by key) and
// waits for their acknowledgements.
func produce(tb testing.TB, brokers []string, topic events.Topic, from, n int) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(string(topic)))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		k := strconv.Itoa(from + i)
		recs[i] = &kgo.Record{Key: []byte("key-" + k), Value: []byte(k)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatal(err)
	}
}

// waitAll waits until the members together have consumed want distinct
// records, and fails with what each holds if that does not happen.
func waitAll(t *testing.T, want int, within time.Duration, ms ...*member) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		union := map[string]bool{}
		for _, m := range ms {
			m.mu.Lock()
			for k := range m.seen {
				union[k] = true
			}
			m.mu.Unlock()
		}
		if len(union) >= want {
			return
		}
		if time.Now().After(deadline) {
			var desc string
			for _, m := range ms {
				m.mu.Lock()
				desc += fmt.Sprintf(" %s: %d records, partitions %v;", m.name, len(m.seen), m.owned)
				m.mu.Unlock()
			}
			t.Fatalf("group consumed %d of %d records within %s (stalled):%s", len(union), want, within, desc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGroupSplitsAndHandsOverPartitions is the control for issue 15's
// stall: two plain franz-go members with the cooperative-sticky balancer
// on the embedded broker (kfake) split 4 partitions, both make progress,
// and after one leaves gracefully the other takes its partitions over from
// the committed offsets and consumes everything. It passes: the embedded
// broker's group coordinator is not what stalled the two serve instances.
func TestGroupSplitsAndHandsOverPartitions(t *testing.T) {
	brokers := startBroker(t)
	const group = "control"
	topic := events.TopicSessions
	produce(t, brokers, topic, 0, 2000)

	a := newMember(t, "A", brokers, group, topic)
	waitAll(t, 1, 10*time.Second, a)
	b := newMember(t, "B", brokers, group, topic)
	produce(t, brokers, topic, 2000, 2000)
	waitAll(t, 4000, 20*time.Second, a, b)

	deadline := time.Now().Add(10 * time.Second)
	for len(a.assignment())+len(b.assignment()) != 4 || len(a.assignment()) == 0 || len(b.assignment()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no split of the 4 partitions: A %v, B %v", a.assignment(), b.assignment())
		}
		time.Sleep(20 * time.Millisecond)
	}
	bParts := b.assignment()
	t.Logf("split: A %v, B %v", a.assignment(), bParts)

	// Both members keep consuming while split.
	produce(t, brokers, topic, 4000, 1000)
	waitAll(t, 5000, 20*time.Second, a, b)

	b.close() // graceful leave
	produce(t, brokers, topic, 5000, 1000)
	waitAll(t, 6000, 20*time.Second, a, b)
	if got := a.assignment(); len(got) != 4 {
		t.Fatalf("after B left, A owns %v, want all 4 partitions", got)
	}
	for _, m := range []*member{a, b} {
		m.mu.Lock()
		for k, n := range m.seen {
			if n > 1 {
				t.Errorf("%s consumed %s %d times", m.name, k, n)
			}
		}
		m.mu.Unlock()
	}
}

// BenchmarkRebalancePauseAfterLeave measures issue 15's "rebalance pause
// after a graceful leave" on the embedded broker with two plain franz-go
// members and the cooperative-sticky balancer (franz-go's default): while a
// producer writes to every partition continuously (a record per partition
// every 5 ms), member B leaves the group gracefully (Client.Close: commit,
// LeaveGroup) and the benchmark reports, from the start of the leave,
//
//   - moved-ms: until A has consumed a record of every partition B owned
//     (partitions moved → processing again),
//   - first-ms: until A consumed the first record of one of them,
//   - own-gap-ms: the longest pause between two records on A's own
//     partitions during the rebalance (cooperative: they keep flowing).
//
// One iteration is one leave; run it with -benchtime=1x -count=N. The
// variants differ in kgo.HeartbeatInterval, how soon the member that stays
// learns of the rebalance (franz-go's and Kafka's default: 3 s).
func BenchmarkRebalancePauseAfterLeave(b *testing.B) {
	for _, bc := range []struct {
		name      string
		heartbeat time.Duration
	}{{"heartbeat=3s", 3 * time.Second}, {"heartbeat=500ms", 500 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			brokers := startBroker(b)
			topic := events.TopicSessions
			var moved, first, gap time.Duration
			for i := 0; i < b.N; i++ {
				m, f, g := rebalancePause(b, brokers, "pause-"+strconv.Itoa(i), topic, bc.heartbeat)
				moved += m
				first += f
				gap += g
			}
			n := float64(b.N)
			b.ReportMetric(float64(moved.Milliseconds())/n, "moved-ms")
			b.ReportMetric(float64(first.Milliseconds())/n, "first-ms")
			b.ReportMetric(float64(gap.Milliseconds())/n, "own-gap-ms")
		})
	}
}

// rebalancePause runs one graceful leave of BenchmarkRebalancePauseAfterLeave.
// The leave comes at a random phase of A's heartbeat (1 s + up to one
// heartbeat interval after the split), as an operator's would.
func rebalancePause(b *testing.B, brokers []string, group string, topic events.Topic, heartbeat time.Duration) (moved, first, ownGap time.Duration) {
	b.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(string(topic)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for p := int32(0); p < 4; p++ {
				prod.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(strconv.Itoa(n))}, nil)
			}
		}
	}()
	defer func() { close(stop); <-produced }()

	a := newMember(b, "A", brokers, group, topic, kgo.HeartbeatInterval(heartbeat))
	m := newMember(b, "B", brokers, group, topic, kgo.HeartbeatInterval(heartbeat))
	deadline := time.Now().Add(20 * time.Second)
	for len(a.assignment()) == 0 || len(m.assignment()) == 0 || len(a.assignment())+len(m.assignment()) != 4 {
		if time.Now().After(deadline) {
			b.Fatalf("no split of the 4 partitions: A %v, B %v", a.assignment(), m.assignment())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second + rand.N(heartbeat)) // both consuming steadily
	bParts := m.assignment()
	a.mu.Lock()
	for p := range a.gaps {
		a.gaps[p] = 0
	}
	for _, p := range bParts {
		delete(a.first, p) // A may have held them before B joined
	}
	a.mu.Unlock()

	start := time.Now()
	m.close()
	deadline = time.Now().Add(30 * time.Second)
	for {
		a.mu.Lock()
		var firstAt, lastAt time.Time
		all := true
		for _, p := range bParts {
			t, ok := a.first[p]
			if !ok {
				all = false
				continue
			}
			if firstAt.IsZero() || t.Before(firstAt) {
				firstAt = t
			}
			if t.After(lastAt) {
				lastAt = t
			}
		}
		if all {
			for p, g := range a.gaps {
				if !contains(bParts, p) && g > ownGap {
					ownGap = g
				}
			}
		}
		a.mu.Unlock()
		if all {
			return lastAt.Sub(start), firstAt.Sub(start), ownGap
		}
		if time.Now().After(deadline) {
			b.Fatalf("A consumed none or some of B's partitions %v within 30 s of B's leave: A owns %v", bParts, a.assignment())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func contains(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestGroupMinSessionTimeout: a member asking for a 1 s session timeout is
// refused by default (Kafka's 6 s minimum: INVALID_SESSION_TIMEOUT) and
// joins and consumes with Config.GroupMinSessionTimeout lowered to 1 s.
func TestGroupMinSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		min  time.Duration
		join bool
	}{{"default 6s", 0, false}, {"lowered to 1s", time.Second, true}} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 4, GroupMinSessionTimeout: tc.min})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			produce(t, b.Addrs(), events.TopicSessions, 0, 1)
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumerGroup("short-session"),
				kgo.ConsumeTopics(string(events.TopicSessions)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(300*time.Millisecond), kgo.DisableFetchSessions())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fs := cl.PollFetches(ctx)
			var joinErr error
			fs.EachError(func(_ string, _ int32, err error) { joinErr = err })
			switch {
			case tc.join && fs.NumRecords() != 1:
				t.Fatalf("with a 1 s minimum: %d records, error %v; want the 1 record", fs.NumRecords(), joinErr)
			case !tc.join && !errors.Is(joinErr, kerr.InvalidSessionTimeout):
				t.Fatalf("with the default minimum: error %v, want INVALID_SESSION_TIMEOUT", joinErr)
			}
		})
	}
}

// TestEmbeddedSessionTimeoutBounds: the embedded broker lets a member ask
// for EmbeddedMinSessionTimeout to EmbeddedMaxSessionTimeout and refuses
// just outside (INVALID_SESSION_TIMEOUT), as CheckEmbeddedSessionTimeout
// says: serve refuses a --session-timeout outside them at once.
func TestEmbeddedSessionTimeoutBounds(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	produce(t, b.Addrs(), events.TopicSessions, 0, 1)
	for i, d := range []time.Duration{broker.EmbeddedMinSessionTimeout - time.Millisecond, broker.EmbeddedMinSessionTimeout, broker.EmbeddedMaxSessionTimeout, broker.EmbeddedMaxSessionTimeout + time.Millisecond} {
		join := broker.CheckEmbeddedSessionTimeout(d) == nil
		if want := i == 1 || i == 2; join != want {
			t.Fatalf("CheckEmbeddedSessionTimeout(%v): allowed %v, want %v", d, join, want)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumerGroup(fmt.Sprintf("bounds-%d", i)),
			kgo.ConsumeTopics(string(events.TopicSessions)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(d), kgo.HeartbeatInterval(time.Second), kgo.DisableFetchSessions())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		cl.Close()
		var joinErr error
		fs.EachError(func(_ string, _ int32, err error) { joinErr = err })
		switch {
		case join && fs.NumRecords() != 1:
			t.Errorf("session timeout %v: %d records, error %v; want the 1 record", d, fs.NumRecords(), joinErr)
		case !join && !errors.Is(joinErr, kerr.InvalidSessionTimeout):
			t.Errorf("session timeout %v: error %v, want INVALID_SESSION_TIMEOUT", d, joinErr)
		}
	}
}
