package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
)

// A client that takes a transactional id over while a Start after a kill
// closes what the killed process left open must not lose its
// transaction to the recovery's abort marker. Before the connection gate,
// the member's transaction, begun and produced to between the
// description of the transactions and the markers, was aborted by the
// marker meant for the killed process (kfake writes it whatever the
// epoch); the member's commit then closed nothing, and the record it was
// told was committed stayed aborted: read_committed gave [A], not [A B].
// Now the member's connection waits until the markers are written.
func TestRecoveryDoesNotAbortAReconnectedTransaction(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const txnID = "chronicle.test/reconnect"
	b, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := txnClient(b.Addrs(), txnID)
	if err != nil {
		t.Fatal(err)
	}
	if err := produceInTxn(ctx, first, "A"); err != nil {
		t.Fatal(err)
	}
	if err := first.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	first.Close()
	b.Close()
	// as after kill -9: the next Start recovers, and describes the id
	if err := os.Remove(filepath.Join(dir, StoppedFile)); err != nil {
		t.Fatal(err)
	}

	produced, commit, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	testBeforeMarkers = func(addrs []string) {
		// the member reconnects now, takes the id over and produces;
		// give it up to 3 s to get there (it cannot, with the gate)
		go func() {
			cl, err := txnClient(addrs, txnID)
			if err != nil {
				done <- err
				return
			}
			defer cl.Close()
			if err := produceInTxn(ctx, cl, "B"); err != nil {
				done <- err
				return
			}
			close(produced)
			<-commit
			done <- cl.EndTransaction(ctx, kgo.TryCommit)
		}()
		select {
		case <-produced:
		case <-time.After(3 * time.Second):
		}
	}
	defer func() { testBeforeMarkers = nil }()
	b, err = Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case <-produced:
	case err := <-done:
		t.Fatalf("the member's transaction: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not produce within 30 s of the gate opening")
	}
	close(commit)
	if err := <-done; err != nil {
		t.Fatalf("the member's commit: %v", err)
	}
	if got := CommittedValues(t, b.Addrs()); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("read_committed: %q, want [A B]: the member committed B", got)
	}
}

func txnClient(addrs []string, id string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(string(events.TopicLearned)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

func produceInTxn(ctx context.Context, cl *kgo.Client, v string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	return cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr()
}

// CommittedValues reads chronicle.learned/0 read_committed to its end
// (for this package's tests, the external ones too).
func CommittedValues(t *testing.T, addrs []string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{string(events.TopicLearned): {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var vals []string
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	return vals
}
