package processors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/broker"
)

// franz-go's EndTransaction(TryCommit) after a produce that failed aborts,
// logs silentAbortLog and returns nil: with the real library, transactWatched
// turns that into errSilentAbort (so a change of the library's wording
// fails here rather than silently disabling the guard), and a transaction
// that commits passes, its record visible to a read-committed consumer.
func TestSilentAbortIsCaught(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer brk.Close()
	watch := &abortWatch{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.TransactionalID("silent-abort-test"), kgo.WithLogger(watch),
		kgo.UnknownTopicRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// the library's path: a produce attempted, none acknowledged, then a commit
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "no-such-topic", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("the produce to a missing topic succeeded: the test needs it to fail")
	}
	var endErr error
	err = transactWatched(watch, func() error {
		endErr = cl.EndTransaction(ctx, kgo.TryCommit)
		return endErr
	})
	if endErr != nil {
		t.Fatalf("EndTransaction(TryCommit) returned %v: franz-go no longer hides the abort (the guard may be unneeded)", endErr)
	}
	if !errors.Is(err, errSilentAbort) {
		t.Fatalf("after franz-go's silent abort transactWatched returned %v, want errSilentAbort: did the library's log line change?", err)
	}

	// a transaction that commits is not flagged, and its record is read
	const topic = "chronicle.sessions"
	err = transactWatched(watch, func() error {
		return transact(ctx, cl, []*kgo.Record{{Topic: topic, Value: []byte("committed")}}, nil)
	})
	if err != nil {
		t.Fatalf("a committed transaction: %v", err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fs := rd.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "committed" {
		t.Fatalf("read committed: %d records, want the committed one", len(recs))
	}
}
