package processors_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
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

func TestStandbyMembers(t *testing.T) {
	ms := []string{"c", "a", "b", "d"}
	for _, c := range []struct {
		owner string
		n     int
		want  []string
	}{
		{"a", 1, []string{"b"}},
		{"d", 1, []string{"a"}}, // wraps around
		{"c", 2, []string{"d", "a"}},
		{"b", 5, []string{"c", "d", "a"}}, // never the owner, at most the others
		{"b", 0, nil},
		{"x", 1, nil}, // not a member
	} {
		if got := processors.StandbyMembers(ms, c.owner, c.n); !slices.Equal(got, c.want) {
			t.Errorf("StandbyMembers(%v, %s, %d) = %v, want %v", ms, c.owner, c.n, got, c.want)
		}
	}
	assigned := map[string]map[string][]int32{
		"a": {"t": {0, 3}}, "b": {"t": {1}}, "c": {"t": {2}}, "d": {},
	}
	got := processors.StandbyAssignment(assigned, "b", 1)
	if want := map[int32]string{0: "a", 3: "a"}; len(got) != 1 || fmt.Sprint(got["t"]) != fmt.Sprint(want) {
		t.Errorf("StandbyAssignment for b = %v, want t: %v", got, want)
	}
	if got := processors.StandbyAssignment(assigned, "a", 1); len(got) != 0 {
		t.Errorf("StandbyAssignment for a (after d, which owns nothing) = %v, want none", got)
	}
}

// killSwitch is a dialer whose connections can all be cut at once: the
// instance using it looks SIGKILLed to the broker (no LeaveGroup, no more
// heartbeats: the group notices after its session timeout).
type killSwitch struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (k *killSwitch) dial(ctx context.Context, network, host string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil, fmt.Errorf("killed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	for _, c := range k.conns {
		_ = c.Close()
	}
}

// standbyInstance starts a Runner with n standby replicas on its own store;
// every connection of it goes through ks when set.
func standbyInstance(t testing.TB, name string, brokers []string, procs []processors.Processor, n int, ks *killSwitch) *instance {
	t.Helper()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.ClientID("instance-" + name), kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(150 * time.Millisecond), kgo.RebalanceTimeout(time.Second)}
	var sbOpts []kgo.Opt
	if ks != nil {
		opts = append(opts, kgo.Dialer(ks.dial))
		sbOpts = append(sbOpts, kgo.Dialer(ks.dial))
	}
	return runInstance(t, name, store, processors.RunnerConfig{Brokers: brokers, Store: store, Processors: procs,
		SubscriberOpts: opts, StandbyReplicas: n, StandbyRefresh: 200 * time.Millisecond, StandbyOpts: sbOpts})
}

// fencedRelay relays in's outbox through a fenced relay (as serve with
// --brokers does), pruning rows of partitions owned elsewhere every
// 200 ms; the returned func stops it (also at cleanup, before the store
// closes).
func fencedRelay(t testing.TB, in *instance, brokers []string) func() {
	t.Helper()
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&processors.Relay{Store: in.store, Producer: prod, Idle: 50 * time.Millisecond,
			Fence: &processors.Fence{Brokers: brokers, Owner: in.runner, PruneEvery: 200 * time.Millisecond}}).Run(ctx)
		prod.Close()
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// failover is what one standby run measured.
type failover struct {
	restore  int64         // records the new owner restored of the partitions it took over
	took     time.Duration // from the kill to the new owner having applied every record of them
	standbys int           // partitions the survivor kept a standby of before the kill
}

// runFailover starts A and B (n standby replicas each) on one embedded
// broker with 4 partitions, imports the first nSessions tau-bench
// sessions, waits for both to have applied every partition they own or
// are a standby of, kills A (its connections cut), imports 10 more
// sessions (trickle: one per 100 ms, so they arrive during the take-over;
// else at once), and times B's take-over. It checks along the way that with n > 0 B's
// store holds A's partitions (B's digest equals A's) and that B's outbox
// lets go of its copies of A's derived events once A's fenced relay
// committed them, and at the end that every derived event is in the log
// once (one evaluation per completed session) and B's store equals a
// replay of the log.
func runFailover(t testing.TB, n, nSessions int, trickle bool) failover {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 4, GroupMinSessionTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brk.Close)
	brokers := brk.Addrs()
	sample, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	// copies of the sample under other trial numbers (new session ids),
	// as the fault suite imports, for logs longer than the sample
	var recs []taubench.Record
	for cp := 0; len(recs) < nSessions+10; cp++ {
		for _, r := range sample {
			r.Trial += 100 * cp
			recs = append(recs, r)
		}
	}
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	published, completed := 0, 0
	publish := func(from, to int) {
		for _, r := range recs[from:min(to, len(recs))] {
			envs, err := taubench.Events(r)
			if err != nil {
				continue // a few sample records are not valid sessions (an empty instruction)
			}
			for _, e := range envs {
				if e.Type == events.SessionCompleted {
					completed++
				}
			}
			if err := prod.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
			published++
		}
	}
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
	// behind lists the partitions of chronicle.sessions among ps whose
	// stored position in in's store is below end
	behind := func(in *instance, ps []int32, end map[int32]int64) string {
		var why string
		for _, p := range ps {
			if next, _ := in.store.NextOffset(sessions.Name, string(events.TopicSessions), p); next < end[p] {
				why += fmt.Sprintf(" %s: partition %d at %d of %d;", in.name, p, next, end[p])
			}
		}
		return why
	}
	procs := []processors.Processor{sessions.Processor{}}
	ks := &killSwitch{}
	a := standbyInstance(t, "A", brokers, procs, n, ks)
	b := standbyInstance(t, "B", brokers, procs, n, nil)
	stopRelayA := fencedRelay(t, a, brokers)
	fencedRelay(t, b, brokers)
	publish(0, nSessions)
	all := []int32{0, 1, 2, 3}
	var aOwns []int32
	waitFor(t, 60*time.Second, func() string {
		as := assignment(t, adm, string(processors.ProcessorsGroup))
		aOwns = as["instance-A"]
		if len(aOwns) == 0 || len(as["instance-B"]) == 0 {
			return fmt.Sprintf("assignment %v: not split", as)
		}
		end := ends()
		if n == 0 {
			return behind(a, aOwns, end) + behind(b, as["instance-B"], end)
		}
		// with standbys, each instance holds every partition
		why := behind(a, all, end) + behind(b, all, end)
		var sb []int32
		for _, s := range b.runner.Standbys() {
			if s.Topic == string(events.TopicSessions) {
				sb = append(sb, s.Partition)
			}
		}
		slices.Sort(sb)
		slices.Sort(aOwns)
		if !slices.Equal(sb, aOwns) {
			why += fmt.Sprintf(" B's standby partitions %v, A owns %v;", sb, aOwns)
		}
		// A owned every partition until B joined: those it lost, it keeps
		// warm as B's standby
		var asb []int32
		for _, s := range a.runner.Standbys() {
			if s.Topic == string(events.TopicSessions) {
				asb = append(asb, s.Partition)
			}
		}
		bOwns := slices.Clone(as["instance-B"])
		slices.Sort(asb)
		slices.Sort(bOwns)
		if !slices.Equal(asb, bOwns) {
			why += fmt.Sprintf(" A's standby partitions %v, B owns %v;", asb, bOwns)
		}
		return why
	})
	f := failover{standbys: len(b.runner.Standbys())}
	if n > 0 {
		for _, s := range b.runner.Standbys() {
			if s.Lag != 0 || s.Owner != a.runner.MemberID() {
				t.Errorf("B's standby %+v: want lag 0 and owner A (%s)", s, a.runner.MemberID())
			}
		}
		da, err := a.store.Digest()
		if err != nil {
			t.Fatal(err)
		}
		db, err := b.store.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if da.All != db.All {
			t.Errorf("with a standby of every partition B's store should equal A's:\nA %sB %s", da, db)
		}
		if got := b.sessionCount(t); got != published {
			t.Errorf("B holds %d sessions, want all %d (its own and its standby partitions')", got, published)
		}
		// B's copies of A's derived events leave its outbox unsent once
		// A's relay committed them (Fence.PruneEvery)
		waitFor(t, 20*time.Second, func() string {
			rows, err := b.store.PendingOutbox(1 << 30)
			if err != nil {
				t.Fatal(err)
			}
			left := 0
			for _, r := range rows {
				if r.Source != nil && slices.Contains(aOwns, r.Source.Partition) {
					left++
				}
			}
			if left > 0 {
				return fmt.Sprintf("B's outbox still holds %d rows of A's partitions", left)
			}
			return ""
		})
	}

	killed := time.Now()
	ks.kill()
	stopRelayA()
	if trickle {
		// one session every 100 ms: records arrive while B's standby hands
		// A's partitions over to B's engine
		for i := nSessions; i < nSessions+10; i++ {
			publish(i, i+1)
			time.Sleep(100 * time.Millisecond)
		}
	} else {
		publish(nSessions, nSessions+10)
	}
	if published == 0 {
		t.Fatal("no session published")
	}
	end := ends()
	waitFor(t, 60*time.Second, func() string {
		own := map[int32]processors.OwnedPartition{}
		for _, p := range b.runner.Ownership().Partitions {
			if p.Topic == string(events.TopicSessions) {
				own[p.Partition] = p
			}
		}
		for _, p := range aOwns {
			if _, ok := own[p]; !ok {
				return fmt.Sprintf("B does not own partition %d yet", p)
			}
		}
		return behind(b, all, end)
	})
	f.took = time.Since(killed)
	for _, p := range b.runner.Ownership().Partitions {
		if p.Topic == string(events.TopicSessions) && slices.Contains(aOwns, p.Partition) && p.RestoreEnd >= 0 {
			f.restore += p.RestoreEnd - p.RestoreFrom
		}
	}
	if len(b.runner.Standbys()) != 0 {
		t.Errorf("B alone keeps standbys %v, want none (no other member)", b.runner.Standbys())
	}

	// every derived event once: each completed session evaluated once
	waitFor(t, 20*time.Second, func() string {
		ids, _ := derivedCounts(t, brokers)
		evals := 0
		for k, c := range ids {
			if c > 1 {
				return fmt.Sprintf("%s written %d times", k, c)
			}
			if strings.HasPrefix(k, string(events.TopicEvaluations)+" ") {
				evals++
			}
		}
		if evals != completed {
			return fmt.Sprintf("%d evaluations of %d completed sessions", evals, completed)
		}
		return ""
	})

	// live = replay: B's store against the log replayed into a new store
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: rep, Processors: procs}); err != nil {
		t.Fatal(err)
	}
	dr, err := rep.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if dr.All != db.All {
		t.Errorf("B's store after the failover differs from a replay of the log:\nB %sreplay %s", db, dr)
	}
	return f
}

// TestStandbyFailover runs two instances with one standby replica each
// (A is B's standby and B is A's: A owned every partition until B joined
// and keeps those it lost warm), kills A, and checks that B takes A's
// partitions over restoring only the records imported after the kill,
// where without standbys (n = 0) it restores A's partitions from offset 0;
// in both cases B's store then equals a replay of the log.
func TestStandbyFailover(t *testing.T) {
	const nSessions = 60
	var with, without failover
	t.Run("standby", func(t *testing.T) { with = runFailover(t, 1, nSessions, true) })
	t.Run("none", func(t *testing.T) { without = runFailover(t, 0, nSessions, true) })
	t.Logf("standby: restored %d records in %s after the kill; none: %d records in %s", with.restore, with.took, without.restore, without.took)
	if t.Failed() {
		return
	}
	if with.standbys == 0 {
		t.Errorf("B kept no standby partition")
	}
	// the 10 sessions imported after the kill (≈ 340 records over 4
	// partitions) are all the standby restores; without it, everything
	if with.restore >= without.restore/2 {
		t.Errorf("with a standby B restored %d records, without %d: want far fewer", with.restore, without.restore)
	}
}

// BenchmarkStandbyFailover times a take-over (runFailover: two instances,
// 4 partitions, then A killed and 10 more sessions imported at once) with
// one standby replica and without, on two log sizes: the first 190
// bundled tau-bench records ("sample", about 6.6k records) and 990 records
// of 5 copies under other trial numbers ("x5", about 34k); the few records
// that are not valid sessions are skipped. failover_s is from the kill to
// B having applied every record of every partition (the group's session
// timeout, 1 s here, included), restored_records what B replayed of A's
// partitions after taking them over. One iteration is one failover: run
// it with -benchtime=1x -count=3.
func BenchmarkStandbyFailover(b *testing.B) {
	for _, c := range []struct {
		name     string
		n        int
		sessions int
	}{{"sample/standby=1", 1, 190}, {"sample/standby=0", 0, 190}, {"x5/standby=1", 1, 990}, {"x5/standby=0", 0, 990}} {
		b.Run(c.name, func(b *testing.B) {
			var took time.Duration
			var restored int64
			for range b.N {
				f := runFailover(b, c.n, c.sessions, false)
				took += f.took
				restored += f.restore
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "failover_s")
			b.ReportMetric(float64(restored)/float64(b.N), "restored_records")
		})
	}
}

// TestStandbyLearnsTheEndOfACaughtUpPartition: A alone applies every
// record, then B joins and takes half the partitions; A keeps them as
// B's standby, caught up from the start. No fetch brings a record then
// (franz-go delivers no empty fetch), yet A's standbys must report the
// partition's end and lag 0 — not an end of -1 until the next record.
func TestStandbyLearnsTheEndOfACaughtUpPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, sample, prod := sampleLog(ctx, t, broker.Config{Partitions: 4, GroupMinSessionTimeout: 300 * time.Millisecond})
	publishRecords(ctx, t, prod, sample[:20])
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	l, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	end := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	procs := []processors.Processor{sessions.Processor{}}
	a := standbyInstance(t, "A", brokers, procs, 1, nil)
	waitFor(t, 30*time.Second, func() string {
		for p, e := range end {
			if next, _ := a.store.NextOffset(sessions.Name, string(events.TopicSessions), p); next < e {
				return fmt.Sprintf("A: partition %d at %d of %d", p, next, e)
			}
		}
		return ""
	})
	standbyInstance(t, "B", brokers, procs, 1, nil)
	waitFor(t, 30*time.Second, func() string {
		as := assignment(t, adm, string(processors.ProcessorsGroup))
		if len(as["instance-B"]) == 0 {
			return fmt.Sprintf("assignment %v: not split", as)
		}
		var got []int32
		for _, s := range a.runner.Standbys() {
			if s.Topic != string(events.TopicSessions) {
				continue
			}
			got = append(got, s.Partition)
			if s.End != end[s.Partition] || s.Lag != 0 || s.Next != end[s.Partition] {
				return fmt.Sprintf("A's standby %+v: want next = end = %d, lag 0", s, end[s.Partition])
			}
		}
		slices.Sort(got)
		bOwns := slices.Clone(as["instance-B"])
		slices.Sort(bOwns)
		if !slices.Equal(got, bOwns) {
			return fmt.Sprintf("A's standby partitions %v, B owns %v", got, bOwns)
		}
		return ""
	})
}
