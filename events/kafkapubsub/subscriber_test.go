package kafkapubsub_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

const waitMsg = 10 * time.Second

// TestInitialOffsetsGroup: InitialOffsets overrides the group's committed
// offset when partitions are assigned; when it declines, the partition
// starts at the start of the log, not at the committed offset (which
// another member, with other state, may have committed).
func TestInitialOffsetsGroup(t *testing.T) {
	brokers := startCluster(t)
	const topic, group = "initial-offsets", "initial-offsets-group"
	createTopic(t, brokers, topic, 1)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, topic, 10, nil)

	// Commit offset 3 (records 0..2 acked).
	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group})
	ch, err := sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(0); want < 3; want++ {
		msg := receive(t, ch, waitMsg)
		if got := offsetOf(t, msg); got != want {
			t.Fatalf("offset %d, want %d", got, want)
		}
		msg.Ack()
	}
	// Offset 3 is delivered but never acked; closing must not commit it.
	receive(t, ch, waitMsg)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(t, brokers, group, topic, 0); got != 3 {
		t.Fatalf("committed offset %d, want 3", got)
	}

	// InitialOffsets says 7: the committed 3 is ignored.
	var mu sync.Mutex
	var asked []string
	sub = newTestSubscriber(t, kafkapubsub.SubscriberConfig{
		Brokers:       brokers,
		ConsumerGroup: group,
		InitialOffsets: func(topic string, partition int32) (int64, bool) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, fmt.Sprintf("%s/%d", topic, partition))
			return 7, partition == 0
		},
	})
	ch, err = sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	msg := receive(t, ch, waitMsg)
	if got := offsetOf(t, msg); got != 7 {
		t.Fatalf("first offset with InitialOffsets %d, want 7", got)
	}
	if string(msg.Payload) != "7" {
		t.Fatalf("payload %q, want \"7\"", msg.Payload)
	}
	msg.Ack() // commits 8
	if got := offsetOf(t, receive(t, ch, waitMsg)); got != 8 {
		t.Fatalf("second offset %d, want 8", got)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != topic+"/0" {
		t.Fatalf("InitialOffsets asked for %v, want [%s/0]", asked, topic)
	}
	mu.Unlock()

	// InitialOffsets declines: the start of the log, not the committed 8.
	sub = newTestSubscriber(t, kafkapubsub.SubscriberConfig{
		Brokers:        brokers,
		ConsumerGroup:  group,
		InitialOffsets: func(string, int32) (int64, bool) { return 0, false },
	})
	ch, err = sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(t, brokers, group, topic, 0); got != 8 {
		t.Fatalf("committed offset %d, want 8", got)
	}
	if got := offsetOf(t, receive(t, ch, waitMsg)); got != 0 {
		t.Fatalf("first offset without an initial offset %d, want 0 (the start of the log), not the committed 8", got)
	}
}

// TestInitialOffsetsNoGroup: without a group InitialOffsets decides where a
// partition starts, both within the first poll and beyond it (seek).
func TestInitialOffsetsNoGroup(t *testing.T) {
	brokers := startCluster(t)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})

	for _, tc := range []struct {
		name  string
		count int
		next  int64
	}{
		{"within first poll", 10, 7},
		{"beyond first poll", 300, 250}, // polls hold at most 100 records
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "initial-offsets-nogroup-" + strconv.Itoa(tc.count)
			createTopic(t, brokers, topic, 1)
			publishNumbered(t, pub, topic, tc.count, nil)

			var calls int
			sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{
				Brokers: brokers,
				InitialOffsets: func(string, int32) (int64, bool) {
					calls++ // only called from the subscription goroutine
					return tc.next, true
				},
			})
			ch, err := sub.Subscribe(context.Background(), topic)
			if err != nil {
				t.Fatal(err)
			}
			for want := tc.next; want < int64(tc.count); want++ {
				msg := receive(t, ch, waitMsg)
				if got := offsetOf(t, msg); got != want {
					t.Fatalf("offset %d, want %d", got, want)
				}
				if string(msg.Payload) != strconv.FormatInt(want, 10) {
					t.Fatalf("payload %q at offset %d", msg.Payload, want)
				}
				msg.Ack()
			}
			select {
			case msg := <-ch:
				t.Fatalf("unexpected message at offset %d", offsetOf(t, msg))
			case <-time.After(200 * time.Millisecond):
			}
			if err := sub.Close(); err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Fatalf("InitialOffsets called %d times, want 1", calls)
			}
		})
	}
}

func committedOffset(t *testing.T, brokers []string, group, topic string, partition int32) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offsets, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offsets.Lookup(topic, partition)
	if !ok {
		return -1
	}
	return o.At
}

// TestNackRedelivery: a Nacked message comes back, as a fresh copy of the
// same record, after NackResendSleep, and nothing else is delivered before
// it is Acked.
func TestNackRedelivery(t *testing.T) {
	brokers := startCluster(t)
	const topic = "nack"
	createTopic(t, brokers, topic, 1)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	published := publishNumbered(t, pub, topic, 3, nil)

	const sleep = 300 * time.Millisecond
	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: "nack-group", NackResendSleep: sleep})
	ch, err := sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}

	first := receive(t, ch, waitMsg)
	if first.UUID != published[0].UUID || offsetOf(t, first) != 0 {
		t.Fatalf("first message %s@%d, want %s@0", first.UUID, offsetOf(t, first), published[0].UUID)
	}
	nackedAt := time.Now()
	first.Nack()
	select {
	case <-first.Context().Done():
	case <-time.After(time.Second):
		t.Fatal("context of a nacked message not canceled")
	}

	again := receive(t, ch, waitMsg)
	if waited := time.Since(nackedAt); waited < sleep {
		t.Fatalf("redelivered after %s, want ≥ %s", waited, sleep)
	}
	if again == first {
		t.Fatal("redelivered the same *message.Message, want a fresh copy")
	}
	if again.UUID != first.UUID || offsetOf(t, again) != 0 || string(again.Payload) != "0" {
		t.Fatalf("redelivered %s@%d %q, want %s@0 \"0\"", again.UUID, offsetOf(t, again), again.Payload, first.UUID)
	}
	// Nack twice more with the record still in place.
	again.Nack()
	again = receive(t, ch, waitMsg)
	if again.UUID != first.UUID {
		t.Fatalf("after second nack got %s, want %s", again.UUID, first.UUID)
	}
	again.Ack()

	next := receive(t, ch, waitMsg)
	if next.UUID != published[1].UUID || offsetOf(t, next) != 1 {
		t.Fatalf("after ack got %s@%d, want %s@1", next.UUID, offsetOf(t, next), published[1].UUID)
	}
	next.Ack()
	if got := committedOffsetEventually(t, brokers, "nack-group", topic, 2); got != 2 {
		t.Fatalf("committed offset %d, want 2", got)
	}
}

// committedOffsetEventually polls the committed offset until it equals
// want or a few seconds passed; it returns the last value seen.
func committedOffsetEventually(t *testing.T, brokers []string, group, topic string, want int64) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := committedOffset(t, brokers, group, topic, 0)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRecordMetadata: delivered messages carry the kafka_* metadata, the
// record headers, and the key taken from partition_key.
func TestRecordMetadata(t *testing.T) {
	brokers := startCluster(t)
	const topic = "metadata"
	createTopic(t, brokers, topic, 4)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})

	before := time.Now()
	msgs := make(message.Messages, 20)
	for i := range msgs {
		msgs[i] = message.NewMessage(fmt.Sprintf("uuid-%02d", i), []byte(strconv.Itoa(i)))
		msgs[i].Metadata.Set("trace", fmt.Sprintf("t%d", i))
		if i%2 == 0 {
			msgs[i].Metadata.Set(kafkapubsub.MetadataKey, "same-key")
		}
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}

	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers})
	ch, err := sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	keyedPartitions := map[string]bool{}
	lastKeyed := -1
	for range msgs {
		msg := receive(t, ch, waitMsg)
		msg.Ack()
		i, err := strconv.Atoi(string(msg.Payload))
		if err != nil || msg.UUID != fmt.Sprintf("uuid-%02d", i) {
			t.Fatalf("message %s has payload %q", msg.UUID, msg.Payload)
		}
		md := msg.Metadata
		if md.Get("trace") != fmt.Sprintf("t%d", i) {
			t.Errorf("message %d: trace %q", i, md.Get("trace"))
		}
		if md.Get(kafkapubsub.TopicMetadataKey) != topic {
			t.Errorf("message %d: topic %q", i, md.Get(kafkapubsub.TopicMetadataKey))
		}
		if _, err := strconv.ParseInt(md.Get(kafkapubsub.PartitionMetadataKey), 10, 32); err != nil {
			t.Errorf("message %d: partition %q", i, md.Get(kafkapubsub.PartitionMetadataKey))
		}
		offsetOf(t, msg)
		ts, err := time.Parse(time.RFC3339Nano, md.Get(kafkapubsub.TimestampMetadataKey))
		if err != nil || ts.Before(before.Add(-time.Second)) || ts.After(time.Now().Add(time.Second)) {
			t.Errorf("message %d: timestamp %q (%v)", i, md.Get(kafkapubsub.TimestampMetadataKey), err)
		}
		if _, ok := md[kafkapubsub.UUIDHeaderKey]; ok {
			t.Errorf("message %d: UUID header leaked into metadata", i)
		}
		key := md.Get(kafkapubsub.RecordKeyMetadataKey)
		if i%2 == 0 {
			if key != "same-key" || md.Get(kafkapubsub.MetadataKey) != "same-key" {
				t.Errorf("message %d: key %q, partition_key %q", i, key, md.Get(kafkapubsub.MetadataKey))
			}
			keyedPartitions[md.Get(kafkapubsub.PartitionMetadataKey)] = true
			if i < lastKeyed {
				t.Errorf("keyed message %d delivered after %d", i, lastKeyed)
			}
			lastKeyed = i
		} else if key != "" {
			t.Errorf("message %d without partition_key has key %q", i, key)
		}
	}
	if len(keyedPartitions) != 1 {
		t.Errorf("messages sharing a partition_key landed in partitions %v", keyedPartitions)
	}
}

// TestSubscribeContextAndClose: canceling the Subscribe context or closing
// the Subscriber closes the channel; Subscribe and SubscribeInitialize fail
// with ErrSubscriberClosed afterwards; Close is idempotent; no goroutine of
// this package or of its franz-go clients survives.
func TestSubscribeContextAndClose(t *testing.T) {
	brokers := startCluster(t, kfake.DefaultNumPartitions(2))
	baseline := goroutinesOfInterest()

	sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: "close-group", ExtraOpts: fastGroupOpts()}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SubscribeInitialize("close"); err != nil {
		t.Fatal(err)
	}
	if err := sub.SubscribeInitialize("close"); err != nil {
		t.Fatalf("SubscribeInitialize of an existing topic: %v", err)
	}
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, "close", 5, nil)

	ctx, cancel := context.WithCancel(context.Background())
	byCtx, err := sub.Subscribe(ctx, "close")
	if err != nil {
		t.Fatal(err)
	}
	held := receive(t, byCtx, waitMsg) // in flight while canceled
	cancel()
	assertClosed(t, byCtx)
	select {
	case <-held.Context().Done():
	case <-time.After(time.Second):
		t.Fatal("message context not canceled when the subscription ended")
	}

	byClose, err := sub.Subscribe(context.Background(), "close")
	if err != nil {
		t.Fatal(err)
	}
	receive(t, byClose, waitMsg)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	assertClosed(t, byClose)
	if err := sub.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := sub.Subscribe(context.Background(), "close"); !errors.Is(err, kafkapubsub.ErrSubscriberClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrSubscriberClosed", err)
	}
	if err := sub.SubscribeInitialize("close"); !errors.Is(err, kafkapubsub.ErrSubscriberClosed) {
		t.Fatalf("SubscribeInitialize after Close: %v, want ErrSubscriberClosed", err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		n, stacks := goroutinesOfInterestStacks()
		if n <= baseline {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of kafkapubsub/kgo left (baseline %d):\n%s", n, baseline, stacks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func assertClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	deadline := time.After(waitMsg)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("messages channel not closed")
		}
	}
}

func goroutinesOfInterest() int {
	n, _ := goroutinesOfInterestStacks()
	return n
}

// goroutinesOfInterestStacks counts the goroutines running code of this
// package or of franz-go's client (not of the kfake broker).
func goroutinesOfInterestStacks() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var n int
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "events/kafkapubsub.(") || strings.Contains(g, "franz-go/pkg/kgo.") {
			if strings.Contains(g, "kafkapubsub_test.") {
				continue
			}
			n++
			out.WriteString(g + "\n\n")
		}
	}
	return n, out.String()
}
