package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// An instance on its embedded broker that another instance joins arms
// its fence (pipeline.Pipeline.RelayFenced): before the join it relayed
// without transactions but kept the relayed frontiers, so the instance
// that joins relays none of the derived events already in the log, and
// from the join on both relay in transactions (the global tables' events
// by their task's owner only). A imports 20 sessions alone, B joins
// (--brokers A's broker), 20 more are imported: every derived event id is
// in the log once for read_committed consumers. With A unfenced
// (Config.Unfenced, what an embedded instance did before) B relays again
// what A had relayed for B's partitions, and A and B both relay the global
// tables' events: ids repeat, so the check can fail.
func TestEmbeddedInstanceJoinedIsFenced(t *testing.T) {
	t.Run("deferred fence", func(t *testing.T) { embeddedJoined(t, false) })
	t.Run("unfenced", func(t *testing.T) { embeddedJoined(t, true) })
}

func embeddedJoined(t *testing.T, unfenced bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sessions := sampleEvents(t, 40)
	a, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4, Unfenced: unfenced})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	publish := func(ss [][]events.Envelope) {
		for _, envs := range ss {
			if err := a.Producer.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(sessions[:20])
	if err := a.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if a.RelayFenced() {
		t.Fatal("A's relay is fenced while A is alone")
	}
	b, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: a.Broker.Addrs(), Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for !(a.RelayFenced() || unfenced) || !split(t, a) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: A fenced %v, partitions split %v", a.RelayFenced(), split(t, a))
		}
		time.Sleep(50 * time.Millisecond)
	}
	publish(sessions[20:])
	for _, p := range []*pipeline.Pipeline{a, b} {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	// the global tables' copies on the non-owner wait for the owner's
	// relayed frontier (pruned every 5 s); caught up means relayed
	time.Sleep(500 * time.Millisecond)
	ids := committedIDs(ctx, t, a.Broker.Addrs(), events.TopicEvaluations, events.TopicMemories, events.TopicPatterns, events.TopicToolgraph, events.TopicLearned)
	repeated := 0
	for id, n := range ids {
		if n != 1 {
			repeated++
			if !unfenced && repeated <= 5 {
				t.Errorf("%s written %d times", id, n)
			}
		}
	}
	if unfenced && repeated == 0 {
		t.Errorf("an unfenced A and B wrote no derived event twice (%d ids): the check cannot fail", len(ids))
	}
	if !unfenced && repeated > 0 {
		t.Errorf("%d of %d derived event ids repeated", repeated, len(ids))
	}
	t.Logf("%d derived event ids, %d repeated", len(ids), repeated)
}

// split reports whether p owns some but not all partitions of
// chronicle.sessions, the group settled.
func split(t *testing.T, p *pipeline.Pipeline) bool {
	t.Helper()
	own := p.Runner.Ownership()
	n := 0
	for _, op := range own.Partitions {
		if op.Topic == string(events.TopicSessions) {
			n++
		}
	}
	return !own.Rebalancing && n > 0 && n < 4
}

// committedIDs counts each event id ("<topic> <id>") of topics, read to
// their end with read_committed (what consumers apply).
func committedIDs(ctx context.Context, t *testing.T, brokers []string, topics ...events.Topic) map[string]int {
	t.Helper()
	names := make([]string, len(topics))
	for i, tp := range topics {
		names[i] = string(tp)
	}
	ids, _, err := brokertest.Read(ctx, brokers, kgo.ReadCommitted(), true, names...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// An instance alone whose processors read no chronicle.sessions (chronicle
// import tot runs the treesearch processor only) does not take itself for
// joined: joined counted the sessions partitions it owned, found none of
// them, and armed the fence with the notice that another instance had
// joined (found by an analyst's walkthrough).
func TestAloneWithoutSessionsIsNotJoined(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2,
		Processors: []processors.Processor{treesearch.Processor{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * pipeline.JoinCheckInterval)
	if p.RelayFenced() {
		t.Fatal("alone, the relay armed its fence: it took itself for joined")
	}
}
