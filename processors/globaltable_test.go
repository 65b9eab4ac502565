package processors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections"
)

// member is an instance of the global-tables test: the group's processors
// on a Runner, its outbox relayed, and the global tables on a
// GlobalTableRunner, all on one Pebble store.
type member struct {
	*instance
	global *processors.GlobalTableRunner
	cancel context.CancelFunc
	done   chan struct{}
}

// startMember starts an instance. fenced: its relay is fenced as serve
// --brokers runs it, the global tables' derived events relayed by the
// owner of their task only (GlobalTableRunner.WithTasks); unfenced: every
// row relayed as it comes, as one process with its embedded broker does.
func startMember(t *testing.T, name string, brokers []string, group, global []processors.Processor, fenced bool) *member {
	t.Helper()
	in := startInstance(t, name, brokers, group)
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	g, err := processors.NewGlobalTableRunner(processors.GlobalTableConfig{Brokers: brokers, Store: in.store, Processors: global, TaskTopics: in.runner.Topics()})
	if err != nil {
		t.Fatal(err)
	}
	relay := &processors.Relay{Store: in.store, Producer: prod}
	if fenced {
		relay.Fence = &processors.Fence{Brokers: brokers, Owner: g.WithTasks(in.runner), PruneEvery: 200 * time.Millisecond}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{instance: in, global: g, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		relayDone := make(chan struct{})
		go func() {
			defer close(relayDone)
			_ = relay.Run(ctx)
		}()
		if err := g.Run(ctx); err != nil {
			t.Errorf("member %s: global tables: %v", name, err)
		}
		<-relayDone
		prod.Close()
	}()
	select {
	case <-g.Running():
	case <-m.done:
		t.Fatalf("member %s: global tables stopped", name)
	case <-time.After(20 * time.Second):
		t.Fatalf("member %s: global tables not assigned within 20 s", name)
	}
	// registered after startInstance's: runs first, so the store is
	// closed after the relay and the global tables stopped
	t.Cleanup(func() { cancel(); <-m.done })
	return m
}

// projectionRows returns every row of a projection, in key order.
func projectionRows(t *testing.T, store *projections.Store, proj string) []string {
	t.Helper()
	var out []string
	if err := store.Scan(proj, "", "", func(k string, v []byte) (bool, error) {
		out = append(out, k+"="+string(v))
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGlobalTablesAcrossInstances runs two instances (two Pebble stores,
// one embedded broker, 4 partitions) on 40 tau-bench sessions: the group
// splits chronicle.sessions between them (sessions and the tool graph's
// keyed transitions), and each runs the tool graph and the coordination
// patterns as global tables. Both must hold byte-identical rows of the two
// tables, answer the same next-tool prediction, and equal a one-instance
// replay of the same log. Their relays are fenced (as serve --brokers
// runs them): every derived event of the tables (graph.*, coordination.
// pattern.changed.v1 on chronicle.learned) is in the log exactly once,
// relayed by the owner of its partition's task. The "unfenced" case runs
// both relays unfenced (every instance relays what it applied, the
// behaviour before WithTasks): the same read then finds every table event
// twice, so the check can fail.
func TestGlobalTablesAcrossInstances(t *testing.T) {
	t.Run("fenced", func(t *testing.T) { globalTablesAcrossInstances(t, true) })
	t.Run("unfenced", func(t *testing.T) { globalTablesAcrossInstances(t, false) })
}

func globalTablesAcrossInstances(t *testing.T, fenced bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})

	group := []processors.Processor{sessions.Processor{}, toolgraph.Transitions{}}
	global := []processors.Processor{toolgraph.Processor{}, sessions.PatternsProcessor{}}
	a := startMember(t, "A", brokers, group, global, fenced)
	b := startMember(t, "B", brokers, group, global, fenced)
	nSessions := 40
	if n, err := strconv.Atoi(os.Getenv("CHRONICLE_GLOBAL_SESSIONS")); err == nil { // e.g. 200: the outbox under a longer import
		nSessions = min(n, len(recs))
	}
	// the outbox's size on each instance while it works: its own rows and
	// its copies of the tables' events (pruned once the owner relayed them)
	var maxOut [2]atomic.Int64
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			for i, m := range []*member{a, b} {
				if n := m.store.OutboxLen(); n > maxOut[i].Load() {
					maxOut[i].Store(n)
				}
			}
			select {
			case <-sampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	for i, r := range recs[:nSessions] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // two scopes: two tool graphs, two keys of chronicle.toolgraph
			for j := range envs {
				envs[j].Scope = "project:b"
			}
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}

	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	// caught up: every partition of chronicle.sessions processed (by its
	// owner: the group's committed offsets), both outboxes relayed, and
	// both instances' global tables at the end of every partition of
	// their topics
	waitFor(t, 60*time.Second, func() string {
		owned := assignment(t, adm, string(processors.ProcessorsGroup))
		if len(owned["instance-A"]) == 0 || len(owned["instance-B"]) == 0 {
			return fmt.Sprintf("no split of the partitions: %v", owned)
		}
		for _, m := range []*member{a, b} {
			l, err := processors.Lag(ctx, adm, m.store, append(append([]processors.Processor{}, group...), global...))
			if err != nil {
				return err.Error()
			}
			if n := processors.TotalLag(l); n != 0 {
				return fmt.Sprintf("instance %s: lag %d", m.name, n)
			}
			if out, err := m.store.PendingOutbox(1); err != nil || len(out) > 0 {
				return fmt.Sprintf("instance %s: outbox not relayed (%v)", m.name, err)
			}
		}
		// the lags again, now that both outboxes are empty: a record
		// relayed between the first look and the outbox's is counted
		for _, m := range []*member{a, b} {
			l, err := processors.Lag(ctx, adm, m.store, global)
			if err != nil {
				return err.Error()
			}
			if n := processors.TotalLag(l); n != 0 {
				return fmt.Sprintf("instance %s: global tables' lag %d after the relay", m.name, n)
			}
		}
		return ""
	})
	close(sampling)
	<-sampled
	t.Logf("%d sessions: outbox rows at most %d on A, %d on B (sampled every 20 ms)", nSessions, maxOut[0].Load(), maxOut[1].Load())
	// nothing was learned in a global table that a second look would change
	time.Sleep(500 * time.Millisecond)

	// the tables' derived events on chronicle.learned: each id once
	// (read_committed, what consumers apply) when fenced, twice (one copy
	// per instance) when not
	ids, aborted := topicCounts(t, brokers, string(events.TopicLearned))
	if len(ids) == 0 {
		t.Fatal("no derived event of the global tables on chronicle.learned")
	}
	counts := map[int]int{}
	for id, n := range ids {
		counts[n]++
		if fenced && n != 1 {
			t.Errorf("%s written %d times", id, n)
		}
	}
	if !fenced && counts[2] == 0 {
		t.Errorf("unfenced relays wrote no table event twice (%v): the check cannot fail", counts)
	}
	t.Logf("chronicle.learned: %d event ids, by copies %v; %d aborted records", len(ids), counts, aborted)

	// a one-instance replay of the same log
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: rep, Processors: append(append([]processors.Processor{}, group...), global...)}); err != nil {
		t.Fatal(err)
	}

	for _, proj := range []string{toolgraph.Name, sessions.PatternsName} {
		ra, rb, rr := projectionRows(t, a.store, proj), projectionRows(t, b.store, proj), projectionRows(t, rep, proj)
		if len(ra) == 0 {
			t.Fatalf("%s: no rows", proj)
		}
		switch {
		case !equalRows(ra, rb):
			t.Errorf("%s: instances differ: A %d rows, B %d rows; first difference: %s", proj, len(ra), len(rb), firstDiff(ra, rb))
		case !equalRows(ra, rr):
			t.Errorf("%s: instance A differs from a one-instance replay: %s", proj, firstDiff(ra, rr))
		default:
			t.Logf("%s: %d rows, identical on both instances and in the replay", proj, len(ra))
		}
	}
	// the same answers from both instances, per scope and for the union
	after := []string{"get_user_details", "get_reservation_details"}
	var answers [][]byte
	for _, scopes := range [][]string{{"project:taubench-airline"}, {"project:b"}, nil} {
		var got [][]byte
		for _, s := range []*projections.Store{a.store, b.store, rep} {
			g, err := toolgraph.LoadIn(s, scopes)
			if err != nil {
				t.Fatal(err)
			}
			j, _ := json.Marshal(g.Next(after, 3))
			got = append(got, j)
		}
		if !bytes.Equal(got[0], got[1]) || !bytes.Equal(got[0], got[2]) {
			t.Errorf("next-tool answers of %v differ:\nA %s\nB %s\nreplay %s", scopes, got[0], got[1], got[2])
		}
		answers = append(answers, got[0])
	}
	var used []int32
	for p := int32(0); p < 4; p++ {
		if n, _ := a.store.NextOffset(toolgraph.Name, string(events.TopicToolgraph), p); n > 0 {
			used = append(used, p)
		}
	}
	t.Logf("partitions of %s with records: %v", events.TopicToolgraph, used)
	if sc, err := toolgraph.Scopes(a.store); err != nil || len(sc) != 2 {
		t.Errorf("scopes of the tool graph: %v, %v; want the two scopes", sc, err)
	}
	// each instance's keyed projection holds only its own partitions'
	// sessions, together all of them: the group split them
	na, nb := a.sessionCount(t), b.sessionCount(t)
	if na == nSessions || nb == nSessions {
		t.Logf("note: one instance holds every session (A %d, B %d): a partition moved during the run", na, nb)
	}
	t.Logf("sessions: A %d, B %d; next after %v in the union: %s", na, nb, after, answers[2])
}

func equalRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDiff(a, b []string) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d:\n  %s\n  %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("%d rows vs %d", len(a), len(b))
}

// A global-table runner restarted on its store resumes at the stored
// offsets: it applies only the records after them (none already applied
// again), and its rows equal a replay of the log.
func TestGlobalTableRunnerResumesFromStoredOffsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 2})
	publish := func(from, to int) { publishRecords(ctx, t, prod, recs[from:to]) }
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// the transitions come from a keyed Runner with its outbox relayed
	in := startInstance(t, "T", brokers, []processors.Processor{toolgraph.Transitions{}})
	defer runRelay(ctx, in, prod)()

	global := []processors.Processor{toolgraph.Processor{}}
	run := func() (*processors.Metrics, func()) {
		m := processors.NewMetrics(prometheus.NewRegistry())
		g, err := processors.NewGlobalTableRunner(processors.GlobalTableConfig{Brokers: brokers, Store: in.store, Processors: global, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := g.Run(rctx); err != nil {
				t.Error(err)
			}
		}()
		<-g.Running()
		return m, func() { stop(); <-done }
	}
	// caught up: the transitions applied, their outbox relayed, and only
	// then the global table's lag read. Read in one go, the lag could be
	// 0 before the relay's last record and the outbox empty just after
	// it, so the runner was stopped one transition short of the replay
	// (a CI run, 2026-12-02: observed_count 4 against 5).
	lagOf := func(ps ...processors.Processor) string {
		l, err := processors.Lag(ctx, adm, in.store, ps)
		if err != nil {
			return err.Error()
		}
		if n := processors.TotalLag(l); n != 0 {
			return fmt.Sprintf("lag %d", n)
		}
		return ""
	}
	caughtUp := func() {
		waitFor(t, 30*time.Second, func() string {
			if msg := lagOf(toolgraph.Transitions{}); msg != "" {
				return "transitions: " + msg
			}
			if out, err := in.store.PendingOutbox(1); err != nil || len(out) > 0 {
				return fmt.Sprintf("outbox not relayed (%v)", err)
			}
			if msg := lagOf(global...); msg != "" {
				return "global table: " + msg
			}
			return ""
		})
	}
	count := func(m *processors.Metrics, result string) int {
		return int(testutil.ToFloat64(m.Events.WithLabelValues(toolgraph.Name, result)))
	}

	publish(0, 10)
	m1, stop1 := run()
	caughtUp()
	stop1()
	first := count(m1, "applied")
	publish(10, 20)
	m2, stop2 := run()
	caughtUp()
	stop2()
	v, err := toolgraph.Version(in.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first == 0 || count(m2, "applied") != v-first || count(m2, "already_applied") != 0 {
		t.Errorf("first run applied %d, the restarted one %d (already applied %d); %d calls in all",
			first, count(m2, "applied"), count(m2, "already_applied"), v)
	}
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: rep, Processors: global}); err != nil {
		t.Fatal(err)
	}
	if ra, rr := projectionRows(t, in.store, toolgraph.Name), projectionRows(t, rep, toolgraph.Name); !equalRows(ra, rr) {
		t.Errorf("restarted global table differs from a replay: %s", firstDiff(ra, rr))
	}
}

// The pipeline's default processors split into the group's and the global
// tables: the tool graph and the patterns run outside the group only.
func TestSplitGlobalTables(t *testing.T) {
	procs := []processors.Processor{sessions.Processor{}, sessions.PatternsProcessor{}, toolgraph.Transitions{}, toolgraph.Processor{}}
	group, global := processors.SplitGlobalTables(procs)
	names := func(ps []processors.Processor) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name())
		}
		return out
	}
	if g, gl := fmt.Sprint(names(group)), fmt.Sprint(names(global)); g != "[sessions toolgraph.transitions]" || gl != "[patterns toolgraph]" {
		t.Errorf("group %s, global %s", g, gl)
	}
	if _, err := processors.NewGlobalTableRunner(processors.GlobalTableConfig{Brokers: []string{"x"}, Processors: global}); err == nil || !strings.Contains(err.Error(), "Store") {
		t.Errorf("no store: %v", err)
	}
}

// CaughtUp returns once the table has applied every partition up to the
// offsets the log had committed when it was called: offsets listed before
// the call are reached when it returns, while records keep arriving. It
// refuses a processor that is not a table of the topic, and a runner that
// does not run waits only as long as its ctx.
func TestGlobalTableCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 3})
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	in := startInstance(t, "C", brokers, []processors.Processor{toolgraph.Transitions{}})
	defer runRelay(ctx, in, prod)()
	topic := string(events.TopicToolgraph)
	g, err := processors.NewGlobalTableRunner(processors.GlobalTableConfig{Brokers: brokers, Store: in.store, Processors: []processors.Processor{toolgraph.Processor{}}})
	if err != nil {
		t.Fatal(err)
	}
	short, stopShort := context.WithTimeout(ctx, 50*time.Millisecond)
	err = g.CaughtUp(short, toolgraph.Name, topic)
	stopShort()
	if err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("CaughtUp before Run: %v", err)
	}
	if err := g.CaughtUp(ctx, sessions.Name, topic); err == nil || !strings.Contains(err.Error(), "is not a table of") {
		t.Fatalf("CaughtUp of a processor that is no table: %v", err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.Run(rctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { stop(); <-done }()
	checked := 0
	for i, r := range recs[:40] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		if i%4 != 3 {
			continue
		}
		before, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CaughtUp(ctx, toolgraph.Name, topic); err != nil {
			t.Fatal(err)
		}
		before.Each(func(o kadm.ListedOffset) {
			next, _ := in.store.NextOffset(toolgraph.Name, o.Topic, o.Partition)
			if next < o.Offset {
				t.Errorf("after CaughtUp %s/%d is at %d, the log had %d before the call", o.Topic, o.Partition, next, o.Offset)
			}
			checked += int(o.Offset)
		})
	}
	if checked == 0 {
		t.Fatal("the tool graph topic stayed empty: nothing was checked")
	}
}
