package processors_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestLagLeavesOutAnOpenTransaction: records of another producer's open
// transaction are not readable by the engine (it reads read_committed), so
// they are not lag: counted, they made /healthz answer 503 "stalled" after
// --stall-after while nothing could be consumed (a kafkajs producer's
// walkthrough, 2026-12-04). They show as Pending, and as lag once the
// transaction commits.
func TestLagLeavesOutAnOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, _ := brokerAndProducer(ctx, t, broker.Config{Partitions: 1})
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	txn, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("lag-txn-test"),
		kgo.DefaultProduceTopic(string(events.TopicSessions)), kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`{"a":1}`, `{"a":2}`} {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	lagOf := func() processors.PartitionLag {
		t.Helper()
		l, err := processors.Lag(ctx, adm, store, []processors.Processor{sessions.Processor{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 1 {
			t.Fatalf("lag of %d partitions, want 1: %+v", len(l), l)
		}
		return l[0]
	}
	open := lagOf()
	if open.Lag != 0 || open.Pending != 2 || open.End != 2 {
		t.Fatalf("open transaction of 2 records: lag %d, pending %d, end %d; want lag 0, pending 2, end 2", open.Lag, open.Pending, open.End)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// committed: the two records and the commit marker are to be read
	done := lagOf()
	if done.Lag != 3 || done.Pending != 0 || done.End != 3 {
		t.Fatalf("committed: lag %d, pending %d, end %d; want lag 3, pending 0, end 3", done.Lag, done.Pending, done.End)
	}
}
