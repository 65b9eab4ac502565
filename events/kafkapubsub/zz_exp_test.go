package kafkapubsub_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

func TestExpRejoin(t *testing.T) {
	brokers := startCluster(t, kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4))
	logger := watermill.NopLogger{}
	pub, _ := kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{Brokers: brokers}, logger)
	defer pub.Close()
	s0, _ := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{Brokers: brokers}, logger)
	if err := s0.SubscribeInitialize("t"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		msg := message.NewMessage(watermill.NewUUID(), []byte("x"))
		msg.Metadata.Set(kafkapubsub.MetadataKey, fmt.Sprint(i%1))
		if err := pub.Publish("t", msg); err != nil {
			t.Fatal(err)
		}
	}
	var opts []kgo.Opt
	if os.Getenv("KGODEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	opts = append(opts, fastGroupOpts()...)
	for round := 0; round < 5; round++ {
		sub, _ := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: "g", ExtraOpts: opts}, logger)
		start := time.Now()
		ch, _ := sub.Subscribe(context.Background(), "t")
		seen := map[string][]string{}
		for i := 0; i < 1000; i++ {
			t0 := time.Now()
			m := <-ch
			if d := time.Since(t0); d > 500*time.Millisecond {
				t.Logf("round %d msg %d waited %s: p%s o%s", round, i, d, m.Metadata.Get(kafkapubsub.PartitionMetadataKey), m.Metadata.Get(kafkapubsub.OffsetMetadataKey))
			}
			seen[m.Metadata.Get(kafkapubsub.PartitionMetadataKey)] = append(seen[m.Metadata.Get(kafkapubsub.PartitionMetadataKey)], m.Metadata.Get(kafkapubsub.OffsetMetadataKey))
			if i == 0 {
				t.Logf("round %d first msg after %s", round, time.Since(start))
			}
			m.Ack()
		}
		for p, offs := range seen {
			t.Logf("round %d: p%s %s..%s (%d)", round, p, offs[0], offs[len(offs)-1], len(offs))
		}
		cs := time.Now()
		sub.Close()
		t.Logf("round %d close took %s", round, time.Since(cs))
	}
}
