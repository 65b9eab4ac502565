package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// Start reports a topic that existed with a max.message.bytes below what
// Chronicle's producers send in one batch (OnSmallMessageLimit), which
// serve and broker warn about; a topic at or above it, and the cluster's
// default (Kafka's 1,048,588), are not reported, nor a topic of the
// embedded broker without a limit of its own. Before, such a topic showed
// only as 503s for the writes the broker refused (the last closing note's
// gap).
func TestSmallMessageLimitIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, limit := range map[events.Topic]string{events.TopicSessions: "500000", events.TopicMemories: "2000000", events.TopicLearned: "1000011"} {
		if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": kadm.StringPtr(limit), "retention.ms": kadm.StringPtr("-1"), "retention.bytes": kadm.StringPtr("-1")}, string(topic)); err != nil {
			t.Fatal(err)
		}
	}
	var reported []broker.TopicMessageLimit
	b, err := broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1, OnSmallMessageLimit: func(ls []broker.TopicMessageLimit) { reported = ls }})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	want := []broker.TopicMessageLimit{{Topic: string(events.TopicLearned), MaxMessageBytes: 1000011}, {Topic: string(events.TopicSessions), MaxMessageBytes: 500000}}
	if len(reported) != len(want) || reported[0] != want[0] || reported[1] != want[1] {
		t.Fatalf("reported %+v, want %+v", reported, want)
	}
	// a second start: every topic exists now, those Chronicle created with
	// the cluster's default limit, which is not reported
	reported = nil
	b, err = broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1, OnSmallMessageLimit: func(ls []broker.TopicMessageLimit) { reported = ls }})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if len(reported) != 2 {
		t.Fatalf("second start reported %+v, want the same two topics", reported)
	}
	// the embedded broker: no topic has a limit of its own
	reported = nil
	dir := t.TempDir()
	for range 2 {
		eb, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Partitions: 1, OnSmallMessageLimit: func(ls []broker.TopicMessageLimit) { reported = ls }})
		if err != nil {
			t.Fatal(err)
		}
		eb.Close()
	}
	if reported != nil {
		t.Fatalf("embedded broker: reported %+v, want none", reported)
	}
}
