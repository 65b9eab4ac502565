package kafkapubsub_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

// TestRebalanceKeepsInFlightMessage: a group member holding an un-acked
// message blocks the rebalance a joining member triggers, so no partition
// is revoked with a message in flight and, across both members, every
// record is delivered exactly once.
func TestRebalanceKeepsInFlightMessage(t *testing.T) {
	brokers := startCluster(t)
	const topic, group, total = "rebalance", "rebalance-group", 600
	createTopic(t, brokers, topic, 4)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, topic, total, func(i int) string { return strconv.Itoa(i) })

	subA := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group})
	chA, err := subA.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	deliveries := map[string]int{} // partition/offset → times delivered
	perMember := map[string]int{}
	record := func(member string, msg *message.Message) {
		mu.Lock()
		defer mu.Unlock()
		deliveries[msg.Metadata.Get(kafkapubsub.PartitionMetadataKey)+"/"+msg.Metadata.Get(kafkapubsub.OffsetMetadataKey)]++
		perMember[member]++
	}
	for range 50 {
		msg := receive(t, chA, waitMsg)
		record("A", msg)
		msg.Ack()
	}
	held := receive(t, chA, waitMsg) // in flight, not acked
	record("A", held)

	subB := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group})
	chB, err := subB.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-chB:
		t.Fatalf("member B got %s@%s/%s while A holds an un-acked message", msg.UUID,
			msg.Metadata.Get(kafkapubsub.PartitionMetadataKey), msg.Metadata.Get(kafkapubsub.OffsetMetadataKey))
	case <-time.After(1500 * time.Millisecond):
	}
	held.Ack()

	// Drain both members (slowly enough for the rebalance to land
	// mid-stream) until every record was seen.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for member, ch := range map[string]<-chan *message.Message{"A": chA, "B": chB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case msg := <-ch:
					record(member, msg)
					time.Sleep(time.Millisecond)
					msg.Ack()
				case <-ctx.Done():
					return
				}
				mu.Lock()
				done := len(deliveries) == total
				mu.Unlock()
				if done {
					cancel()
				}
			}
		}()
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != total {
		t.Fatalf("%d distinct records delivered, want %d", len(deliveries), total)
	}
	for rec, n := range deliveries {
		if n != 1 {
			t.Errorf("record %s delivered %d times", rec, n)
		}
	}
	if perMember["B"] == 0 {
		t.Errorf("member B received nothing (A: %d): no rebalance happened", perMember["A"])
	}
	t.Logf("deliveries per member: %v", perMember)
}

// TestRebalanceNotBlockedByUnsentMessage: a group member whose channel
// nobody reads (its next message is polled but not handed out) gives way
// to a rebalance, instead of blocking it until the rebalance timeout.
func TestRebalanceNotBlockedByUnsentMessage(t *testing.T) {
	brokers := startCluster(t)
	const group = "unsent-group"
	createTopic(t, brokers, "unsent-1", 2)
	createTopic(t, brokers, "unsent-2", 2)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, "unsent-1", 3, nil)
	published2 := publishNumbered(t, pub, "unsent-2", 3, func(int) string { return "k" })

	// Both subscriptions are members of one group.
	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group})
	ch2, err := sub.Subscribe(context.Background(), "unsent-2")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let it join, poll and block handing out the first message
	ch1, err := sub.Subscribe(context.Background(), "unsent-1")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 3 {
		receive(t, ch1, 5*time.Second).Ack()
	}
	t.Logf("joining member consumed after %s", time.Since(start).Round(time.Millisecond))

	// The member that yielded still delivers everything, in order, once.
	for i, want := range published2 {
		msg := receive(t, ch2, waitMsg)
		if msg.UUID != want.UUID {
			t.Fatalf("message %d of unsent-2 is %s, want %s", i, msg.UUID, want.UUID)
		}
		msg.Ack()
	}
	select {
	case msg := <-ch2:
		t.Fatalf("unexpected redelivery of %s", msg.UUID)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestKickedMemberDeliversNothingStale: a member that holds a message past
// the rebalance timeout is removed from the group; once the message is
// Acked (its commit fails), the member does not deliver the rest of its
// poll, which now belongs to another member, and it rejoins the group.
func TestKickedMemberDeliversNothingStale(t *testing.T) {
	brokers := startCluster(t)
	const topic, group, total = "kicked", "kicked-group", 300
	createTopic(t, brokers, topic, 1)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, topic, total, nil)

	shortRebalance := []kgo.Opt{kgo.RebalanceTimeout(time.Second)}
	subA := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group, ExtraOpts: shortRebalance})
	chA, err := subA.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	held := receive(t, chA, waitMsg)
	if offsetOf(t, held) != 0 {
		t.Fatalf("first offset %d, want 0", offsetOf(t, held))
	}

	subB := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group, ExtraOpts: shortRebalance})
	chB, err := subB.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	// B takes over once A is removed (after the 1s rebalance timeout), from
	// the committed offset: nothing is committed, so from offset 0.
	seenB := map[int64]int{}
	for len(seenB) < total {
		msg := receive(t, chB, waitMsg)
		seenB[offsetOf(t, msg)]++
		msg.Ack()
	}
	held.Ack() // too late: A is no longer a member

	select {
	case msg := <-chA:
		t.Fatalf("kicked member delivered offset %d of its stale poll", offsetOf(t, msg))
	case <-time.After(2 * time.Second):
	}
	for off := int64(0); off < total; off++ {
		if seenB[off] != 1 {
			t.Errorf("member B got offset %d %d times", off, seenB[off])
		}
	}

	// A rejoined with a fresh client: when B leaves, A continues at B's
	// committed offset.
	publishNumbered(t, pub, topic, 10, nil)
	if err := subB.Close(); err != nil {
		t.Fatal(err)
	}
	for want := int64(total); want < total+10; want++ {
		msg := receive(t, chA, waitMsg)
		if got := offsetOf(t, msg); got != want {
			t.Fatalf("after B left, A got offset %d, want %d", got, want)
		}
		msg.Ack()
	}
}
