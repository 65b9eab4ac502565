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

// Chronicle creates its topics keeping every record (retention.ms and
// retention.bytes -1), on a cluster whose default removes them after 7
// days too, and Start reports a topic that existed removing records
// (OnFiniteRetention), which serve warns about; on the embedded broker a
// topic without its own retention removes nothing, and is not reported.
// Before, topics took the cluster's default, and a replay after a week
// rebuilt a state without the removed records (a review of the Kafka
// settings, 2026-12-01).
func TestTopicsKeepTheirRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// an external cluster whose topic chronicle.sessions exists with a
	// retention of a day
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
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr("86400000")}, string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	// and chronicle.workflows compacted, which keeps one record per key
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr("-1"), "retention.bytes": kadm.StringPtr("-1"), "cleanup.policy": kadm.StringPtr("compact")}, string(events.TopicWorkflows)); err != nil {
		t.Fatal(err)
	}
	var reported []broker.TopicRetention
	b, err := broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1, OnFiniteRetention: func(rs []broker.TopicRetention) { reported = rs }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(reported) != 2 || reported[0].Topic != string(events.TopicSessions) || reported[0].RetentionMs != "86400000" ||
		reported[1].Topic != string(events.TopicWorkflows) || reported[1].CleanupPolicy != "compact" {
		t.Fatalf("reported %+v; want chronicle.sessions with retention.ms 86400000 and chronicle.workflows with cleanup.policy compact", reported)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, string(events.TopicMemories), string(events.TopicDeadLetter))
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		got := map[string]string{}
		for _, cfg := range rc.Configs {
			got[cfg.Key] = cfg.MaybeValue()
		}
		if got["retention.ms"] != "-1" || got["retention.bytes"] != "-1" || got["cleanup.policy"] != "delete" {
			t.Errorf("created topic %s: retention.ms %q, retention.bytes %q, cleanup.policy %q; want -1, -1 and delete", rc.Name, got["retention.ms"], got["retention.bytes"], got["cleanup.policy"])
		}
	}
	// the embedded broker, a log created by the code before (topics
	// without configurations): nothing reported
	dir := t.TempDir()
	eb, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	ecl, err := kgo.NewClient(kgo.SeedBrokers(eb.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	// as the code before created it: no configuration of its own
	if _, err := kadm.NewClient(ecl).DeleteTopic(ctx, string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(ecl).CreateTopic(ctx, 1, -1, nil, string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	ecl.Close()
	eb.Close()
	reported = nil
	eb, err = broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Partitions: 1, OnFiniteRetention: func(rs []broker.TopicRetention) { reported = rs }})
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close()
	if reported != nil {
		t.Fatalf("embedded broker: reported %+v; want none (it removes nothing without a topic's own retention)", reported)
	}
}
