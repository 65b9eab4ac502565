package processors_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// After every instance of a cluster stopped, the instances come back one
// after the other with new member ids: the first takes every task, and
// when the other rejoins, the group gives it back the tasks its store
// holds, so it restores nothing, rather than tasks it never processed
// (from offset 0) while the first keeps the ones it had to restore. Two
// rounds, the instances coming back in both orders; on the sticky
// balancer's placement (no holdings), the rejoining instance got the same
// partitions in both rounds, so one round gave it partitions it did not
// hold.
func TestRestartedClusterTasksGoWhereTheirStateIs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	end := map[int32]int64{}
	group := string(processors.ProcessorsGroup)
	procs := []processors.Processor{sessions.Processor{}}
	dirs := map[string]string{"A": t.TempDir(), "B": t.TempDir()}
	start := func(name string) *instance {
		store, err := projections.Open(dirs[name], projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return runInstance(t, name, store, processors.RunnerConfig{Brokers: brokers, Store: store, Processors: procs,
			SubscriberOpts: []kgo.Opt{kgo.ClientID("instance-" + name)}})
	}
	// settled: the group assigns every partition, to each of want's
	// instances (the others none), and each owner's store reached the end
	settled := func(want ...*instance) map[string][]int32 {
		var owned map[string][]int32
		waitFor(t, 30*time.Second, func() string {
			owned = assignment(t, adm, group)
			n := 0
			for _, in := range want {
				ps := owned["instance-"+in.name]
				if len(ps) == 0 {
					return fmt.Sprintf("%s owns nothing: %v", in.name, owned)
				}
				n += len(ps)
				for _, p := range ps {
					if next, _ := in.store.NextOffset(sessions.Name, string(events.TopicSessions), p); next < end[p] {
						return fmt.Sprintf("%s's store is at %d of %d on partition %d", in.name, next, end[p], p)
					}
				}
			}
			if n != len(end) {
				return fmt.Sprintf("%d of %d partitions assigned: %v", n, len(end), owned)
			}
			return ""
		})
		for _, ps := range owned {
			slices.Sort(ps)
		}
		return owned
	}

	// the log is written once both own their tasks: each store holds its
	// own tasks only
	a, b := start("A"), start("B")
	waitFor(t, 30*time.Second, func() string {
		if owned := assignment(t, adm, group); len(owned["instance-A"])+len(owned["instance-B"]) != 4 || len(owned["instance-A"]) == 0 || len(owned["instance-B"]) == 0 {
			return fmt.Sprintf("no split yet: %v", owned)
		}
		return ""
	})
	publishRecords(ctx, t, prod, recs[:40])
	ends, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	first := settled(a, b)
	a.stop()
	b.stop()
	t.Logf("split before the restarts: %v", first)

	// each round starts from the stores as the split left them (the
	// instance alone processes every partition, so its store would hold
	// them all in the next round)
	split := map[string]string{}
	for name, dir := range dirs {
		split[name] = t.TempDir()
		if err := os.CopyFS(split[name], os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
		for name := range dirs {
			dirs[name] = t.TempDir()
			if err := os.CopyFS(dirs[name], os.DirFS(split[name])); err != nil {
				t.Fatal(err)
			}
		}
		alone := start(order[0])
		settled(alone)
		back := start(order[1])
		owned := settled(alone, back)
		if !slices.Equal(owned["instance-"+back.name], first["instance-"+back.name]) {
			t.Errorf("%s came back after %s: it owns %v, its store holds %v (assignment %v)", back.name, alone.name, owned["instance-"+back.name], first["instance-"+back.name], owned)
		}
		// what the rejoining instance restored: nothing
		for _, op := range back.runner.Ownership().Partitions {
			if op.Topic == string(events.TopicSessions) && op.RestoreFrom < op.RestoreEnd {
				t.Errorf("%s restored partition %d from offset %d to %d", back.name, op.Partition, op.RestoreFrom, op.RestoreEnd)
			}
		}
		alone.stop()
		back.stop()
	}
}
