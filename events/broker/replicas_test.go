package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// Start creates the topics on an external cluster with the replication
// factor and min.insync.replicas asked for (serve's --replication-factor
// and --min-insync-replicas), and refuses a factor above the cluster's
// brokers naming the flag. Before, both were the cluster's defaults and
// no setting existed (a Kafka platform review: Kafka's stock 1 and 1 make
// acks=all one copy).
func TestTopicReplicasAsAskedFor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 2, ReplicationFactor: 4}); err == nil || !strings.Contains(err.Error(), "--replication-factor") {
		t.Fatalf("replication factor 4 on 3 brokers: %v; want an error naming --replication-factor", err)
	}
	// 2 of 3 brokers: kfake's default, like a cluster's
	// default.replication.factor of 3, would give 3
	b, err := broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 2, ReplicationFactor: 2, MinInsyncReplicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := make([]string, len(events.AllTopics))
	for i, tp := range events.AllTopics {
		names[i] = string(tp)
	}
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		d := td[name]
		if d.Err != nil || len(d.Partitions) == 0 {
			t.Fatalf("topic %s: %+v", name, d)
		}
		for _, p := range d.Partitions {
			if len(p.Replicas) != 2 {
				t.Errorf("%s partition %d: %d replicas, want 2", name, p.Partition, len(p.Replicas))
			}
		}
		rc, err := rcs.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mi string
		for _, cfg := range rc.Configs {
			if cfg.Key == "min.insync.replicas" {
				mi = cfg.MaybeValue()
			}
		}
		if mi != "2" {
			t.Errorf("%s: min.insync.replicas %q, want 2", name, mi)
		}
	}
}

// A min.insync.replicas above the replication factor refuses every
// acks=all write, and the embedded broker is one broker: Validate names
// the field.
func TestTopicReplicasValidated(t *testing.T) {
	for _, c := range []struct {
		cfg  broker.Config
		want string
	}{
		{broker.Config{Brokers: []string{"k:9092"}, ReplicationFactor: 2, MinInsyncReplicas: 3}, "Config.MinInsyncReplicas: 3 is above the replication factor 2"},
		{broker.Config{Brokers: []string{"k:9092"}, ReplicationFactor: -2}, "Config.ReplicationFactor: must be -1"},
		{broker.Config{Brokers: []string{"k:9092"}, MinInsyncReplicas: -1}, "Config.MinInsyncReplicas: must be 0"},
		{broker.Config{DataDir: "d", ReplicationFactor: 3}, "for an external cluster"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
}
