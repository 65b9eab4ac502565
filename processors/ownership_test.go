package processors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// held is a processor of chronicle.sessions whose Apply waits until
// release is closed: it holds a restore open.
type held struct{ release chan struct{} }

func (h held) Name() string           { return "test-held" }
func (h held) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (h held) StatePerKey() bool      { return true }
func (h held) Apply(tx *projections.Tx, env *events.Envelope) error {
	<-h.release
	return tx.Set(events.EntityKey(env.EffectiveScope(), env.SessionID), []byte(env.ID))
}

// TestOwnershipRestore: A owns the 4 partitions of chronicle.sessions
// alone and catches up (health ok, nothing to restore). B joins with a
// store that never processed them: it is assigned 2 partitions whose
// restore starts at offset 0 and ends at the partitions' end offsets at
// assignment; while its processors are held, its health is "restoring"
// (not yet stalled) and chronicle_restore_remaining_records shows what is
// left; released, the restore finishes (remaining 0, health ok) and A owns
// the other 2 partitions.
func TestOwnershipRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})
	publishRecords(ctx, t, prod, recs[:20])
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
	a := startInstance(t, "A", brokers, procs, kgo.HeartbeatInterval(500*time.Millisecond))
	healthOf := func(r *processors.Runner, ps []processors.Processor, st *projections.Store) processors.HealthReport {
		lag, err := processors.Lag(ctx, adm, st, ps)
		if err != nil {
			t.Fatal(err)
		}
		return processors.Health(r.Ownership(), lag, 20*time.Second, time.Now())
	}
	waitFor(t, 20*time.Second, func() string {
		h := healthOf(a.runner, procs, a.store)
		if h.Status != processors.HealthOK || len(h.Partitions) != 4 {
			return fmt.Sprintf("A alone: %+v", h)
		}
		for _, p := range a.runner.Ownership().Partitions {
			if p.RestoreFrom != 0 || p.RestoreEnd != end[p.Partition] || p.Next != end[p.Partition] {
				return fmt.Sprintf("A's partition %+v: restore from 0 to %d expected, done", p, end[p.Partition])
			}
		}
		return ""
	})

	// B: never processed these partitions; its second processor is held
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	storeB, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	procsB := []processors.Processor{sessions.Processor{}, held{release}}
	rb, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: storeB, Processors: procsB, Metrics: processors.NewMetrics(reg),
		SubscriberOpts: []kgo.Opt{kgo.ClientID("instance-B"), kgo.HeartbeatInterval(500 * time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- rb.Run(context.Background()) }()
	defer func() { free(); _ = rb.Close(); <-doneB; _ = storeB.Close() }()

	var owned []processors.OwnedPartition
	waitFor(t, 20*time.Second, func() string {
		owned = rb.Ownership().Partitions
		if len(owned) != 2 {
			return fmt.Sprintf("B owns %d partitions", len(owned))
		}
		return ""
	})
	for _, p := range owned {
		if p.RestoreFrom != 0 || p.RestoreEnd != end[p.Partition] || p.RestoreRemaining() != end[p.Partition] {
			t.Fatalf("B's partition %+v: restore from 0 to %d, nothing applied yet expected", p, end[p.Partition])
		}
	}
	h := healthOf(rb, procsB, storeB)
	if h.Status != processors.HealthRestoring {
		t.Fatalf("B while its restore is held: %+v", h)
	}
	gauge := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "chronicle_restore_remaining_records" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var part string
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "partition" {
						part = lp.GetValue()
					}
				}
				out[part] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	g := gauge()
	for _, p := range owned {
		if g[fmt.Sprint(p.Partition)] != float64(end[p.Partition]) {
			t.Fatalf("chronicle_restore_remaining_records %v, want %d for partition %d", g, end[p.Partition], p.Partition)
		}
	}

	free()
	waitFor(t, 20*time.Second, func() string {
		h := healthOf(rb, procsB, storeB)
		if h.Status != processors.HealthOK {
			return fmt.Sprintf("B after release: %+v", h)
		}
		for p, v := range gauge() {
			if v != 0 {
				return fmt.Sprintf("restore gauge of partition %s still %v", p, v)
			}
		}
		return ""
	})
	waitFor(t, 10*time.Second, func() string {
		if n := len(a.runner.Ownership().Partitions); n != 2 || a.runner.Ownership().Rebalancing {
			return fmt.Sprintf("A owns %d partitions, rebalancing %v", n, a.runner.Ownership().Rebalancing)
		}
		return ""
	})
}

// TestHealthJudgement checks the states Health derives, partition by
// partition, and the instance's status as the most severe of them.
func TestHealthJudgement(t *testing.T) {
	now := time.Now()
	topic := string(events.TopicSessions)
	part := func(n int32, next, end int64, idle time.Duration) processors.OwnedPartition {
		return processors.OwnedPartition{Topic: topic, Partition: n, RestoreEnd: end, Next: next, LastProgress: now.Add(-idle)}
	}
	lag := func(n int32, l int64) processors.PartitionLag {
		return processors.PartitionLag{Processor: "p", Topic: topic, Partition: n, Lag: l}
	}
	for _, c := range []struct {
		name string
		own  processors.Ownership
		lag  []processors.PartitionLag
		want string
		per  []string
	}{
		{"caught up, idle for long", processors.Ownership{Partitions: []processors.OwnedPartition{part(0, 10, 10, time.Hour)}}, []processors.PartitionLag{lag(0, 0)}, "ok", []string{"ok"}},
		{"lag, recent progress", processors.Ownership{Partitions: []processors.OwnedPartition{part(0, 10, 10, time.Second)}}, []processors.PartitionLag{lag(0, 5)}, "ok", []string{"ok"}},
		{"restoring", processors.Ownership{Partitions: []processors.OwnedPartition{part(0, 3, 10, time.Second), part(1, 10, 10, time.Hour)}}, []processors.PartitionLag{lag(0, 0), lag(1, 0)}, "restoring", []string{"restoring", "ok"}},
		{"lag, no progress", processors.Ownership{Partitions: []processors.OwnedPartition{part(0, 10, 10, time.Minute), part(1, 3, 10, time.Second)}}, []processors.PartitionLag{lag(0, 2), lag(1, 0)}, "stalled", []string{"stalled", "restoring"}},
		{"restore with no progress", processors.Ownership{Partitions: []processors.OwnedPartition{part(0, 3, 10, time.Minute)}}, nil, "stalled", []string{"stalled"}},
		{"rebalancing", processors.Ownership{Rebalancing: true, Partitions: []processors.OwnedPartition{part(0, 3, 10, time.Second)}}, nil, "rebalancing", []string{"restoring"}},
		{"another instance's partition is not judged", processors.Ownership{}, []processors.PartitionLag{lag(3, 100)}, "ok", nil},
	} {
		h := processors.Health(c.own, c.lag, 30*time.Second, now)
		if h.Status != c.want || len(h.Partitions) != len(c.per) {
			t.Errorf("%s: %+v, want %s", c.name, h, c.want)
			continue
		}
		for i, s := range c.per {
			if h.Partitions[i].Status != s {
				t.Errorf("%s: partition %d is %s, want %s", c.name, i, h.Partitions[i].Status, s)
			}
		}
	}
}

// A standby replica's position does not count as processing: a partition
// this store applied to its end, which no member of the group committed,
// shows its whole lag when it is a standby of this instance's (its owner
// may be dead), and none otherwise. Before, the member holding a killed
// owner's standbys said lag 0 until the session timeout handed them over
// (an operator's walkthrough, 2026-11-30).
func TestStandbyPositionIsNoProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 2})
	publishRecords(ctx, t, prod, recs[:20])
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	procs := []processors.Processor{sessions.Processor{}}
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: st, Processors: procs}); err != nil {
		t.Fatal(err)
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	lagOf := func(standby func(string, int32) bool) map[int32]processors.PartitionLag {
		l, err := processors.LagInGroupStandby(ctx, adm, st, procs, processors.ProcessorsGroup, standby)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]processors.PartitionLag{}
		for _, pl := range l {
			if pl.Topic == string(events.TopicSessions) {
				out[pl.Partition] = pl
			}
		}
		return out
	}
	for p, pl := range lagOf(nil) {
		if pl.Lag != 0 || pl.End == 0 {
			t.Fatalf("partition %d applied to its end here: %+v, want lag 0", p, pl)
		}
	}
	got := lagOf(func(topic string, p int32) bool { return p == 0 })
	if got[0].Lag != got[0].End || got[0].Next != got[0].End || got[1].Lag != 0 {
		t.Fatalf("partition 0 a standby here: %+v and %+v; want partition 0's whole lag (its Next still reported), partition 1's none", got[0], got[1])
	}
}
