package processors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/broker"
)

// confirmOffset: a group offset at or beyond the committed one confirms
// the commit; one below it, also while a transaction left open holds the
// new offset staged (as after an EndTransaction that answered nil without
// ending it), is errTxnUnconfirmed within confirmTimeout; once that
// transaction commits, the offset confirms.
func TestConfirmOffset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer brk.Close()
	const topic, group = "chronicle.sessions", "confirm-test"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, group, commit); err != nil {
		t.Fatal(err)
	}
	k := tp{topic, 0}
	if err := confirmOffset(ctx, cl, group, k, 1); err != nil {
		t.Fatalf("offset 1 committed, confirming 1: %v", err)
	}
	if err := confirmOffset(ctx, cl, group, k, 2); !errors.Is(err, errTxnUnconfirmed) {
		t.Fatalf("offset 1 committed, confirming 2: %v, want errTxnUnconfirmed", err)
	}
	// a transaction left open with the group's offset staged
	txn, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.TransactionalID("confirm-test-txn"), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, err := lookupTopicID(ctx, txn, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitOffsetInTxn(ctx, txn, "confirm-test-txn", group, id, k, 2); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { confirmTimeout = d }(confirmTimeout)
	confirmTimeout = 500 * time.Millisecond
	start := time.Now()
	if err := confirmOffset(ctx, cl, group, k, 2); !errors.Is(err, errTxnUnconfirmed) {
		t.Fatalf("offset 2 staged in an open transaction: %v, want errTxnUnconfirmed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("confirming took %v, bound %v", d, confirmTimeout)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := confirmOffset(ctx, cl, group, k, 2); err != nil {
		t.Fatalf("offset 2 committed by the transaction: %v", err)
	}
}
