package kafkapubsub_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

// suitePartitions is the partition count of every topic the suite creates.
const suitePartitions = 4

// TestPubSub runs Watermill's Pub/Sub conformance suite against an embedded
// kfake broker, twice: once with subscribers that use no consumer group
// (every subscriber reads the whole log) and once with subscribers that
// share one consumer group per test (so that the suite's "new subscriber"
// instances continue from the group's committed offsets). TestConsumerGroups
// always uses the suite's own group names.
//
// The suite runs in full (not short) mode. About 30s of it is
// TestContinueAfterErrors, whose 300 Nacks each wait the default
// NackResendSleep (100ms). TestReconnect is skipped by the suite: it needs a
// RestartServiceCommand, and the in-process broker cannot be restarted by a
// command.
func TestPubSub(t *testing.T) {
	brokers := startCluster(t, kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(suitePartitions))

	features := tests.Features{
		ConsumerGroups:      true,
		ExactlyOnceDelivery: false,
		// Kafka orders per partition, hence per record key. The suite
		// checks the order per payload, so its publisher keys records by
		// payload (see payloadKeyMarshaler); unkeyed records spread over
		// partitions would have no order relative to each other.
		GuaranteedOrder: true,
		Persistent:      true,
	}

	t.Run("NoGroup", func(t *testing.T) {
		t.Parallel()
		f := features
		// Without a group every subscriber reads from the start of the log.
		f.NewSubscriberReceivesOldMessages = true
		tests.TestPubSub(t, f,
			func(t *testing.T) (message.Publisher, message.Subscriber) {
				return newSuitePubSub(t, brokers, "")
			},
			func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
				return newSuitePubSub(t, brokers, group)
			},
		)
	})

	t.Run("Group", func(t *testing.T) {
		t.Parallel()
		// All subscribers a test creates join the same group, so a new
		// subscriber does not receive what the group already consumed:
		// NewSubscriberReceivesOldMessages stays false.
		tests.TestPubSub(t, features,
			func(t *testing.T) (message.Publisher, message.Subscriber) {
				return newSuitePubSub(t, brokers, "suite-"+strings.ReplaceAll(t.Name(), "/", "-"))
			},
			func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
				return newSuitePubSub(t, brokers, group)
			},
		)
	})
}

// payloadKeyMarshaler keys every record by its payload so that the suite's
// per-payload ordering check is a per-partition ordering check.
type payloadKeyMarshaler struct{ kafkapubsub.DefaultMarshaler }

func (m payloadKeyMarshaler) Marshal(topic string, msg *message.Message) (*kgo.Record, error) {
	rec, err := m.DefaultMarshaler.Marshal(topic, msg)
	if err != nil {
		return nil, err
	}
	rec.Key = append([]byte(nil), msg.Payload...)
	return rec, nil
}

func newSuitePubSub(t *testing.T, brokers []string, group string) (message.Publisher, message.Subscriber) {
	t.Helper()
	logger := testLogger()
	pub, err := kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{
		Brokers:   brokers,
		Marshaler: payloadKeyMarshaler{},
	}, logger)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{
		Brokers:       brokers,
		ConsumerGroup: group,
		ExtraOpts:     fastGroupOpts(),
	}, logger)
	if err != nil {
		t.Fatal(err)
	}
	// The suite does not close every subscriber it creates. One left open
	// keeps its clients retrying against the broker after the suite ended,
	// and their goroutines come and go under later tests' leak checks
	// (TestSubscribeContextAndClose). Close is idempotent.
	t.Cleanup(func() {
		_ = sub.Close()
		_ = pub.Close()
	})
	return pub, sub
}

// fastGroupOpts makes group members notice rebalances quickly; the
// production default heartbeat (3s) would dominate the suite's runtime.
func fastGroupOpts() []kgo.Opt {
	return []kgo.Opt{kgo.HeartbeatInterval(200 * time.Millisecond)}
}

// startCluster starts an in-process kfake broker on 127.0.0.1 and returns
// its address; it is closed when the test ends.
func startCluster(t testing.TB, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// testLogger logs to stderr when KAFKAPUBSUB_DEBUG is set.
func testLogger() watermill.LoggerAdapter {
	if os.Getenv("KAFKAPUBSUB_DEBUG") != "" {
		return watermill.NewStdLogger(true, false)
	}
	return watermill.NopLogger{}
}

// createTopic creates topic with the given partition count.
func createTopic(t testing.TB, brokers []string, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func newTestPublisher(t testing.TB, cfg kafkapubsub.PublisherConfig) *kafkapubsub.Publisher {
	t.Helper()
	pub, err := kafkapubsub.NewPublisher(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

func newTestSubscriber(t testing.TB, cfg kafkapubsub.SubscriberConfig) *kafkapubsub.Subscriber {
	t.Helper()
	cfg.ExtraOpts = append(fastGroupOpts(), cfg.ExtraOpts...)
	sub, err := kafkapubsub.NewSubscriber(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// publishNumbered publishes n messages whose payloads are their index; key
// (if not nil) gives each message's partition_key.
func publishNumbered(t testing.TB, pub message.Publisher, topic string, n int, key func(i int) string) message.Messages {
	t.Helper()
	msgs := make(message.Messages, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(strconv.Itoa(i)))
		if key != nil {
			msgs[i].Metadata.Set(kafkapubsub.MetadataKey, key(i))
		}
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
	return msgs
}

// receive returns the next message or fails the test after timeout.
func receive(t testing.TB, ch <-chan *message.Message, timeout time.Duration) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("messages channel closed")
		}
		return msg
	case <-time.After(timeout):
		t.Fatalf("no message within %s", timeout)
	}
	return nil
}

// offsetOf returns the kafka_offset metadata of msg.
func offsetOf(t testing.TB, msg *message.Message) int64 {
	t.Helper()
	off, err := strconv.ParseInt(msg.Metadata.Get(kafkapubsub.OffsetMetadataKey), 10, 64)
	if err != nil {
		t.Fatalf("message %s: bad %s: %v", msg.UUID, kafkapubsub.OffsetMetadataKey, err)
	}
	return off
}
