package pair_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// The PAIR loop on a cluster of two instances, each owning one of the two
// partitions: a failed session on one, its successful revision on the
// other. The pair worker that handles the revision's evaluation runs on
// the revision's instance, whose sessions projection does not hold the
// parent; it finds the parent's evaluation in the outcomes global table
// and writes the pair_improvement_completed memory. (Before the table it
// read the parent from its own projection, found nothing, and wrote no
// memory.)
func TestPAIRImprovementAcrossInstances(t *testing.T) {
	sc := getScenario(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2, Embedder: sharedEmbedder(t), PAIR: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: a.Broker.Addrs(), Partitions: 2, Embedder: sharedEmbedder(t), PAIR: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	owner := func(p *pipeline.Pipeline) (int32, bool) {
		own := p.Runner.Ownership()
		var parts []int32
		for _, op := range own.Partitions {
			if op.Topic == string(events.TopicSessions) {
				parts = append(parts, op.Partition)
			}
		}
		if own.Rebalancing || len(parts) != 1 {
			return 0, false
		}
		return parts[0], true
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pa, okA := owner(a)
		pb, okB := owner(b)
		if okA && okB && pa != pb {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the two instances did not split the two partitions within 60 s")
		}
	}
	// a parent and a revision whose record keys land on different partitions
	scope := sc.failed[0].EffectiveScope()
	partition := func(id string) int32 {
		return int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(events.EntityKey(scope, id))}, 2))
	}
	var parentID, childID string
	for i := 0; parentID == ""; i++ {
		p, c := fmt.Sprintf("pair-cluster/parent-%d", i), fmt.Sprintf("pair-cluster/revision-%d", i)
		if partition(p) != partition(c) {
			parentID, childID = p, c
		}
	}
	wait := func() {
		t.Helper()
		for _, p := range []*pipeline.Pipeline{a, b} {
			if err := p.WaitCaughtUp(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Producer.Publish(ctx, rekey(t, sc.failed, parentID, 1, "")...); err != nil {
		t.Fatal(err)
	}
	wait()
	if err := a.Producer.Publish(ctx, rekey(t, sc.good, childID, 2, parentID)...); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		wait()
		var found []string
		for _, p := range []*pipeline.Pipeline{a, b} {
			for _, m := range memoriesOf(t, p.Store, childID) {
				for _, tag := range m.Tags {
					if tag == pair.ImprovementTag {
						found = append(found, m.ID)
					}
				}
			}
		}
		if len(found) == 1 {
			break
		}
		if len(found) > 1 || time.Now().After(deadline) {
			t.Fatalf("pair_improvement_completed memories of %s (parent %s on partition %d, revision on %d): %v; pipeline A behind: %s; B: %s",
				childID, parentID, partition(parentID), partition(childID), found, behind(ctx, a), behind(ctx, b))
		}
	}
}
