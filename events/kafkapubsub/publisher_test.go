package kafkapubsub_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

// TestPublishMissingTopicFails: on a cluster without automatic topic
// creation, publishing to a missing topic fails quickly instead of hanging.
func TestPublishMissingTopicFails(t *testing.T) {
	brokers := startCluster(t) // no kfake.AllowAutoTopicCreation
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})

	start := time.Now()
	errCh := make(chan error, 1)
	go func() {
		errCh <- pub.Publish("does-not-exist", message.NewMessage(watermill.NewUUID(), []byte("x")))
	}()
	select {
	case err := <-errCh:
		if err == nil {
			t.Fatal("Publish to a missing topic succeeded")
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("error %v, want one wrapping UNKNOWN_TOPIC_OR_PARTITION", err)
		}
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("Publish to a missing topic still blocked after 10s")
	}
}

// TestPublishRetriesFailedRecords: records the broker rejects with a
// retriable error are produced again, and Publish succeeds once they are
// acknowledged; every message is written exactly once.
func TestPublishRetriesFailedRecords(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	const topic = "retry"
	createTopic(t, brokers, topic, 1)

	// Reject the first two produce requests with NOT_ENOUGH_REPLICAS.
	var rejected atomic.Int32
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if rejected.Add(1) >= 2 {
			cluster.DropControl()
		} else {
			cluster.KeepControl()
		}
		return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), kerr.NotEnoughReplicas.Code), nil, true
	})

	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{
		Brokers:        brokers,
		InitialBackoff: 10 * time.Millisecond,
		// Let the client fail a rejected record at once instead of
		// retrying internally, so that Publish's own retries are used.
		ExtraOpts: []kgo.Opt{kgo.RecordRetries(0)},
	})
	published := publishNumbered(t, pub, topic, 5, nil)
	if n := rejected.Load(); n != 2 {
		t.Fatalf("%d produce requests rejected, want 2", n)
	}

	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers})
	ch, err := sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range published {
		msg := receive(t, ch, waitMsg)
		if msg.UUID != want.UUID || offsetOf(t, msg) != int64(i) {
			t.Fatalf("record %d is %s, want %s", offsetOf(t, msg), msg.UUID, want.UUID)
		}
		msg.Ack()
	}
	select {
	case msg := <-ch:
		t.Fatalf("duplicate record at offset %d", offsetOf(t, msg))
	case <-time.After(300 * time.Millisecond):
	}
}

// TestPublishGivesUpAfterMaxAttempts: a record that keeps failing with a
// retriable error fails Publish after MaxAttempts attempts.
func TestPublishGivesUpAfterMaxAttempts(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	createTopic(t, brokers, "always-failing", 1)

	var produces atomic.Int32
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		produces.Add(1)
		return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), kerr.NotEnoughReplicas.Code), nil, true
	})

	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{
		Brokers:        brokers,
		MaxAttempts:    3,
		InitialBackoff: 10 * time.Millisecond,
		ExtraOpts:      []kgo.Opt{kgo.RecordRetries(0)},
	})
	err = pub.Publish("always-failing", message.NewMessage(watermill.NewUUID(), []byte("x")))
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("error %v, want one wrapping NOT_ENOUGH_REPLICAS", err)
	}
	if n := produces.Load(); n != 3 {
		t.Fatalf("%d produce requests, want 3 (MaxAttempts)", n)
	}
}

// TestPublishAfterClose: Publish fails with ErrPublisherClosed after Close,
// and Close is idempotent.
func TestPublishAfterClose(t *testing.T) {
	brokers := startCluster(t, kfake.AllowAutoTopicCreation())
	pub, err := kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{Brokers: brokers}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	err = pub.Publish("any", message.NewMessage(watermill.NewUUID(), []byte("x")))
	if !errors.Is(err, kafkapubsub.ErrPublisherClosed) {
		t.Fatalf("Publish after Close: %v, want ErrPublisherClosed", err)
	}
}

// TestPublishMarshalError: a message the Marshaler rejects fails Publish
// and nothing of the call is produced.
func TestPublishMarshalError(t *testing.T) {
	brokers := startCluster(t)
	createTopic(t, brokers, "marshal", 1)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})

	good := message.NewMessage(watermill.NewUUID(), []byte("ok"))
	bad := message.NewMessage(watermill.NewUUID(), []byte("bad"))
	bad.Metadata.Set(kafkapubsub.UUIDHeaderKey, "spoofed")
	err := pub.Publish("marshal", good, bad)
	if !errors.Is(err, kafkapubsub.ErrReservedMetadata) {
		t.Fatalf("error %v, want ErrReservedMetadata", err)
	}

	sub := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers})
	ch, err := sub.Subscribe(context.Background(), "marshal")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-ch:
		t.Fatalf("message %s was produced", msg.UUID)
	case <-time.After(500 * time.Millisecond):
	}
}
