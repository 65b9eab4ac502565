package processors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// derivedTopics are the topics the sessions processor writes derived
// events to.
var derivedTopics = []string{string(events.TopicEvaluations), string(events.TopicPatterns), string(events.TopicMemories)}

// gated is a processor whose Apply blocks, once armed, until released: an
// instance paused in the middle of a batch.
type gated struct {
	processors.Processor
	armed   atomic.Bool
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (g *gated) StatePerKey() bool { return true }

// Apply blocks, once armed, on a session's completion: the batch it holds
// then derives an evaluation, so a zombie has a derived event to write
// twice (blocking on any record made the unfenced control flaky: a batch
// with no completion derives nothing, and no second copy can show).
func (g *gated) Apply(tx *projections.Tx, env *events.Envelope) error {
	if g.armed.Load() && env.Type == events.SessionCompleted {
		g.once.Do(func() {
			close(g.blocked)
			<-g.release
		})
	}
	return g.Processor.Apply(tx, env)
}

// zombieView is a relay's view of the engine's ownership that stops
// learning of revokes once frozen: the partitions and assignments as they
// were, with the applied position read from the store. It is what an
// instance resumed after a pause sees until its next heartbeat tells it
// that it was evicted, made to last, so that its relay certainly tries to
// write for partitions another instance owns now.
type zombieView struct {
	r     *processors.Runner
	store *projections.Store
	mu    sync.Mutex
	held  []processors.OwnedPartition
}

func (z *zombieView) freeze() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.held = z.r.Ownership().Partitions
}

func (z *zombieView) Ownership() processors.Ownership {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.held == nil {
		return z.r.Ownership()
	}
	out := processors.Ownership{Partitions: append([]processors.OwnedPartition(nil), z.held...)}
	for i, p := range out.Partitions {
		out.Partitions[i].Next, _ = z.store.NextOffset(sessions.Name, p.Topic, p.Partition)
	}
	return out
}

// derivedCounts reads the derived topics to their last stable offset and
// counts each derived event id (read_committed: what consumers apply), and
// the aborted data records (read_uncommitted minus read_committed).
func derivedCounts(t testing.TB, brokers []string) (ids map[string]int, aborted int) {
	t.Helper()
	return topicCounts(t, brokers, derivedTopics...)
}

// topicCounts reads topics to their last stable offset and counts each
// event id ("<topic> <id>"; read_committed), and the aborted data records.
func topicCounts(t testing.TB, brokers []string, topics ...string) (ids map[string]int, aborted int) {
	t.Helper()
	return countTopics(t, brokers, true, topics...)
}

// topicCountsRaw is topicCounts for topics whose records need not be
// events (a dead letter of a record that did not parse): ids is nil.
func topicCountsRaw(t testing.TB, brokers []string, topics ...string) (ids map[string]int, aborted int) {
	t.Helper()
	return countTopics(t, brokers, false, topics...)
}

func countTopics(t testing.TB, brokers []string, parse bool, topics ...string) (ids map[string]int, aborted int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ids, committed, err := brokertest.Read(ctx, brokers, kgo.ReadCommitted(), parse, topics...)
	if err != nil {
		t.Fatal(err)
	}
	_, all, err := brokertest.Read(ctx, brokers, kgo.ReadUncommitted(), false, topics...)
	if err != nil {
		t.Fatal(err)
	}
	return ids, all - committed
}

// TestFenceZombieWrites proves the fenced relay (processors.Fence): an
// instance A blocked in the middle of a batch past the session and
// rebalance timeouts loses its partitions to B, which restores them from
// the log and relays their derived events; then A resumes, finishes its
// batch and its relay, which still believes it owns the partitions (its
// ownership view is frozen, as after a SIGCONT before the next
// heartbeat), tries to write their derived events. The broker rejects the
// zombie's transaction: on the derived topics every derived event id is
// there exactly once for consumers (read_committed), A's attempts are
// aborted records, A's rows stay in its outbox, and the evaluations are
// one per completed session. The "unfenced" case runs A's relay without
// the fence from the moment it was paused: the same check then finds A's
// zombie writes as second copies, so the check is able to fail.
func TestFenceZombieWrites(t *testing.T) {
	withControl(t, "fenced", "unfenced", zombie)
}

// withControl runs fn(t, true) as subtest name and fn(t, false) as
// subtest control: the same check with the mechanism under test off.
func withControl(t *testing.T, name, control string, fn func(t *testing.T, on bool)) {
	t.Run(name, func(t *testing.T) { fn(t, true) })
	t.Run(control, func(t *testing.T) { fn(t, false) })
}

func zombie(t *testing.T, fenced bool) {
	ctx, brokers, load := sessionLoad(t)
	publish, evaluations, prod := load.publish, load.evaluationsOnce, load.prod
	timeouts := []kgo.Opt{kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(150 * time.Millisecond), kgo.RebalanceTimeout(time.Second)}

	// A alone processes the first half and relays its derived events.
	publish(0, loadSessions/2)
	gate := &gated{Processor: sessions.Processor{}, blocked: make(chan struct{}), release: make(chan struct{})}
	a := startInstance(t, "A", brokers, []processors.Processor{gate}, timeouts...)
	view := &zombieView{r: a.runner, store: a.store}
	var aErrs sync.Map
	relayA := &processors.Relay{Store: a.store, Producer: prod, Idle: 50 * time.Millisecond,
		OnError: func(err error) { aErrs.Store(err.Error(), err) }, Fence: &processors.Fence{Brokers: brokers, Owner: view}}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	actx, acancel := context.WithCancel(rctx)
	defer acancel()
	adone := make(chan struct{})
	go func() { _ = relayA.Run(actx); close(adone) }()
	waitFor(t, 30*time.Second, evaluations)

	// A blocks in the middle of its next batch: its poll holds the
	// rebalance B's join starts, so the group evicts it after the
	// rebalance timeout and B takes every partition.
	view.freeze()
	gate.armed.Store(true)
	publish(loadSessions/2, loadSessions)
	select {
	case <-gate.blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("A never applied a record of the second half")
	}
	b := startInstance(t, "B", brokers, []processors.Processor{sessions.Processor{}}, timeouts...)
	relayB := &processors.Relay{Store: b.store, Producer: prod, Idle: 50 * time.Millisecond,
		Fence: &processors.Fence{Brokers: brokers, Owner: b.runner}}
	go func() { _ = relayB.Run(rctx) }()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	waitFor(t, 30*time.Second, func() string {
		if owned := assignment(t, adm, string(processors.ProcessorsGroup)); len(owned["instance-B"]) != 2 {
			return fmt.Sprintf("B does not own both partitions: %v", owned)
		}
		return ""
	})
	// B restored both partitions and relayed what A had not.
	waitFor(t, 30*time.Second, evaluations)
	_, abortedBefore := derivedCounts(t, brokers)

	positionA := func() (sum int64) {
		for p := int32(0); p < 2; p++ {
			n, _ := a.store.NextOffset(sessions.Name, string(events.TopicSessions), p)
			sum += n
		}
		return sum
	}
	frozenAt := positionA()
	if !fenced {
		// the control: the zombie's relay without its fence
		acancel()
		<-adone
		go func() { _ = (&processors.Relay{Store: a.store, Producer: prod, Idle: 50 * time.Millisecond}).Run(rctx) }()
	}
	// A resumes: its batch commits to its store and its relay tries.
	close(gate.release)
	pendingA := func() int {
		rows, err := a.store.PendingOutbox(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if fenced {
		waitFor(t, 20*time.Second, func() string {
			var saw error
			aErrs.Range(func(_, v any) bool {
				if err := v.(error); errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.InvalidProducerIDMapping) {
					saw = err
					return false
				}
				return true
			})
			if saw == nil {
				return "A's relay was not fenced yet"
			}
			return ""
		})
		rcancel()
		if why := evaluations(); why != "" {
			t.Fatalf("after the zombie's relay: %s", why)
		}
		if n := pendingA(); n == 0 {
			t.Fatal("A's outbox is empty: the zombie's rows were relayed or dropped")
		}
		_, abortedAfter := derivedCounts(t, brokers)
		t.Logf("zombie's aborted records on the derived topics: %d (before it resumed: %d); rows left in its outbox: %d", abortedAfter, abortedBefore, pendingA())
		return
	}
	// unfenced: the zombie's rows reach the log as second copies
	waitFor(t, 20*time.Second, func() string {
		if positionA() == frozenAt {
			return "A's blocked batch is not committed"
		}
		if pendingA() == 0 {
			return ""
		}
		return "A's relay has rows left"
	})
	rcancel()
	if why := evaluations(); why == "" {
		t.Fatal("the unfenced zombie wrote no second copy: the check cannot tell a fence from none")
	} else {
		t.Logf("unfenced, as expected: %s", why)
	}
}

// A relay fenced on a partition the group still assigns to its instance
// takes the partition's transactional id back (Fence's look at the
// group): here another producer initialises the ids of both partitions of
// a sole member (as the previous generation's owner did when a paused
// instance got its partition back from a cooperative rebalance, with no
// new assignment reported to it). The relay's next transactions are
// fenced; it then confirms with the group that it owns the partitions,
// takes them over again and relays everything: the outbox empties and
// every derived event is in the log once. (Before, the rows stayed in the
// outbox for good.)
func TestFenceReclaimsPartitionTheGroupConfirms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 2})
	in := startInstance(t, "A", brokers, []processors.Processor{sessions.Processor{}})
	var fencedErrs atomic.Int64
	rprod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer rprod.Close()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	fence := &processors.Fence{Brokers: brokers, Owner: in.runner, PruneEvery: 200 * time.Millisecond}
	go func() {
		defer close(done)
		_ = (&processors.Relay{Store: in.store, Producer: rprod, Idle: 50 * time.Millisecond, Fence: fence,
			OnError: func(err error) {
				if strings.Contains(err.Error(), "FENCED") || strings.Contains(err.Error(), "EPOCH") {
					fencedErrs.Add(1)
				}
			}}).Run(rctx)
	}()
	defer func() { stop(); <-done }()
	publish := func(rs []taubench.Record) {
		for _, r := range rs {
			envs, err := taubench.Events(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := prod.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	relayed := func() string {
		l, err := processors.Lag(ctx, kadm.NewClient(admCl), in.store, []processors.Processor{sessions.Processor{}})
		if err == nil && processors.TotalLag(l) != 0 {
			return fmt.Sprintf("lag %d", processors.TotalLag(l))
		}
		if out, err := in.store.PendingOutbox(1); err != nil || len(out) > 0 {
			return fmt.Sprintf("outbox not relayed (%v)", err)
		}
		return ""
	}
	publish(recs[:10])
	waitFor(t, 20*time.Second, relayed)
	// the previous generation's owner: initialises both partitions' ids
	for p := int32(0); p < 2; p++ {
		thief, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(fence.TransactionalID(string(events.TopicSessions), p)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := thief.ProducerID(ctx); err != nil {
			t.Fatal(err)
		}
		thief.Close()
	}
	publish(recs[10:20])
	waitFor(t, 30*time.Second, relayed)
	if fencedErrs.Load() == 0 {
		t.Fatal("the relay was never fenced: the test proves nothing")
	}
	ids, _ := derivedCounts(t, brokers)
	evals := 0
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s written %d times", id, n)
		}
		if strings.HasPrefix(id, string(events.TopicEvaluations)+" ") {
			evals++
		}
	}
	t.Logf("fenced %d times, then relayed again: %d derived events, %d evaluations, each once", fencedErrs.Load(), len(ids), evals)
}

// heldOwner is the Ownership an unarmed Deferred fence's round reads,
// held once armed: the first round after arm waits for snap, takes the
// runner's ownership then, and returns it only after release, so the
// round holds its snapshot (and the fence's lock) across whatever the
// test does meanwhile.
type heldOwner struct {
	r       *processors.Runner
	armed   atomic.Bool
	once    sync.Once
	snap    chan struct{} // closed by the test: take the snapshot now
	blocked chan struct{} // closed here: the snapshot is taken, the round waits
	release chan struct{} // closed by the test: the round goes on
}

func (h *heldOwner) Ownership() processors.Ownership {
	first := false
	if h.armed.Load() {
		h.once.Do(func() { first = true })
	}
	if !first {
		return h.r.Ownership()
	}
	<-h.snap
	own := h.r.Ownership()
	close(h.blocked)
	<-h.release
	return own
}

// An instance on its embedded broker relays without transactions until
// another joins (Fence.Deferred). A round that took its ownership before
// the join's revoke sends its rows after it: without Fence.Revoked the
// joiner, assigned the partition, reads the old relayed frontier and
// relays the same rows again. A's round is held with rows of the second
// half in its snapshot while B joins: with the wait (A's Runner.OnRevoked
// calling Fence.Revoked) the revoke does not complete, and B gets no
// partition, until the round has sent the rows and committed their
// frontier, and every derived event is in the log once; the control
// without it writes some twice.
func TestDeferredRelayRevokeWaitsForRound(t *testing.T) {
	withControl(t, "wait", "control-no-wait", deferredRevoke)
}

func deferredRevoke(t *testing.T, wait bool) {
	ctx, brokers, load := sessionLoad(t)
	publish, evaluations, prod := load.publish, load.evaluationsOnce, load.prod
	timeouts := []kgo.Opt{kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(150 * time.Millisecond), kgo.RebalanceTimeout(20 * time.Second)}

	// A alone: its deferred relay sends the first half's derived events
	// without transactions and commits their frontiers.
	publish(0, loadSessions/2)
	firstHalf := load.completed
	a := startInstance(t, "A", brokers, []processors.Processor{sessions.Processor{}}, timeouts...)
	held := &heldOwner{r: a.runner, snap: make(chan struct{}), blocked: make(chan struct{}), release: make(chan struct{})}
	fenceA := &processors.Fence{Brokers: brokers, Owner: held, Deferred: true}
	revoked := make(chan struct{}, 8)
	revokeDone := make(chan struct{}, 8)
	a.runner.OnRevoked(func(r map[string][]int32) {
		revoked <- struct{}{}
		if wait && !fenceA.Revoked(r) {
			t.Errorf("Revoked: the round did not end within %v", processors.RevokeWait)
		}
		revokeDone <- struct{}{}
	})
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	go func() {
		_ = (&processors.Relay{Store: a.store, Producer: prod, Idle: 50 * time.Millisecond, Fence: fenceA}).Run(rctx)
	}()
	waitFor(t, 30*time.Second, evaluations)

	// A's next round holds, its snapshot taken once A applied the second
	// half: it owns both partitions and will send their new rows.
	held.armed.Store(true)
	publish(loadSessions/2, loadSessions)
	ends := map[int32]int64{}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	lo, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	waitFor(t, 30*time.Second, func() string {
		for p, end := range ends {
			if n, _ := a.store.NextOffset(sessions.Name, string(events.TopicSessions), p); n < end {
				return fmt.Sprintf("A applied partition %d to %d of %d", p, n, end)
			}
		}
		return ""
	})
	close(held.snap)
	select {
	case <-held.blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("A's relay did not start a round")
	}

	// B joins (its relay fenced, as `serve --brokers` runs it): the group
	// revokes a partition from A.
	b := startInstance(t, "B", brokers, []processors.Processor{sessions.Processor{}}, timeouts...)
	go func() {
		_ = (&processors.Relay{Store: b.store, Producer: prod, Idle: 50 * time.Millisecond, Fence: &processors.Fence{Brokers: brokers, Owner: b.runner}}).Run(rctx)
	}()
	select {
	case <-revoked:
	case <-time.After(30 * time.Second):
		t.Fatal("B's join revoked nothing from A")
	}
	bOwns := func() string {
		if owned := assignment(t, adm, string(processors.ProcessorsGroup)); len(owned["instance-B"]) == 0 {
			return fmt.Sprintf("B owns no partition: %v", owned)
		}
		return ""
	}
	if wait {
		// the revoke waits for the held round: B gets nothing meanwhile
		time.Sleep(time.Second)
		select {
		case <-revokeDone:
			t.Fatal("the revoke completed while A's round was held")
		default:
		}
		if bOwns() == "" {
			t.Fatal("B was assigned a partition while A's round was held")
		}
	} else {
		// without the wait B takes its partition and relays its rows
		// from the old frontier while A's round is held
		waitFor(t, 30*time.Second, bOwns)
		waitFor(t, 30*time.Second, func() string {
			ids, _ := derivedCounts(t, brokers)
			n := 0
			for k := range ids {
				if strings.HasPrefix(k, string(events.TopicEvaluations)) {
					n++
				}
			}
			// A sent the first half only; B's partition adds some
			if n <= firstHalf {
				return "B relayed nothing yet"
			}
			return ""
		})
	}
	close(held.release)
	if wait {
		select {
		case <-revokeDone:
		case <-time.After(processors.RevokeWait + 5*time.Second):
			t.Fatal("the revoke did not complete after A's round was released")
		}
		waitFor(t, 30*time.Second, bOwns)
	}
	if !wait {
		waitFor(t, 30*time.Second, func() string {
			if why := evaluations(); why == "" || strings.Contains(why, "written") {
				return ""
			}
			return "the derived events are not all in the log yet"
		})
		if why := evaluations(); !strings.Contains(why, "written") {
			t.Fatalf("without the wait no derived event was written twice (%q): the check cannot tell the wait from none", why)
		} else {
			t.Logf("without the wait, as expected: %s", why)
		}
		return
	}
	waitFor(t, 30*time.Second, evaluations)
	// and stays so once both relays are idle
	time.Sleep(time.Second)
	if why := evaluations(); why != "" {
		t.Fatal(why)
	}
}

// loadSessions is how many tau-bench sessions a load publishes in
// all (in two halves).
const loadSessions = 30

// load publishes tau-bench sessions to a two-partition embedded broker and
// counts the completed ones.
type load struct {
	t         *testing.T
	ctx       context.Context
	brokers   []string
	recs      []taubench.Record
	prod      *events.Producer
	completed int // completed sessions published so far
}

// sessionLoad starts the broker (groups' session timeouts from 300 ms)
// and a load on it, under a context that ends after 90 s or with the test.
func sessionLoad(t *testing.T) (context.Context, []string, *load) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 2, GroupMinSessionTimeout: 300 * time.Millisecond})
	return ctx, brokers, &load{t: t, ctx: ctx, brokers: brokers, recs: recs, prod: prod}
}

// publish publishes sessions [from, to) of the sample.
func (l *load) publish(from, to int) {
	for _, r := range l.recs[from:to] {
		envs, err := taubench.Events(r)
		if err != nil {
			l.t.Fatal(err)
		}
		for _, e := range envs {
			if e.Type == events.SessionCompleted {
				l.completed++
			}
		}
		if err := l.prod.Publish(l.ctx, envs...); err != nil {
			l.t.Fatal(err)
		}
	}
}

// evaluationsOnce is "" when no derived event id is in the log twice and
// every completed session published has its evaluation; else what is not
// so.
func (l *load) evaluationsOnce() string {
	ids, _ := derivedCounts(l.t, l.brokers)
	n := 0
	for k, c := range ids {
		if c > 1 {
			return fmt.Sprintf("%s written %d times", k, c)
		}
		if strings.HasPrefix(k, string(events.TopicEvaluations)) {
			n++
		}
	}
	if n != l.completed {
		return fmt.Sprintf("%d evaluations of %d completed sessions", n, l.completed)
	}
	return ""
}
