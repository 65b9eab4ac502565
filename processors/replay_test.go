package processors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections"
)

// A replay bounded by StopAt (what audit runs: as far as the live store
// got) still reads every partition to the log's end fixed at its start;
// ReplayStats.PastStopAt counts the records it read but applied to no
// processor, so audit names the records it compared, not those it read.
func TestReplayCountsRecordsPastStopAt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 2})
	publishRecords(ctx, t, prod, recs[:6])
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	end0, _ := ends.Lookup(string(events.TopicSessions), 0)
	if end0.Offset < 5 {
		t.Fatalf("partition 0 has %d records: too few to cut 5", end0.Offset)
	}
	replay := func(stopAt func(string, string, int32) int64) processors.ReplayStats {
		store, err := projections.Open(t.TempDir(), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}, StopAt: stopAt})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	all := replay(nil)
	if all.Records != total || all.PastStopAt != 0 {
		t.Fatalf("unbounded replay: %+v, want %d records and none past", all, total)
	}
	cut := replay(func(_, _ string, p int32) int64 {
		if p == 0 {
			return end0.Offset - 5
		}
		return 1 << 62
	})
	if cut.Records != total || cut.PastStopAt != 5 || cut.Applied != all.Applied-5 {
		t.Fatalf("replay stopped 5 short on partition 0: %+v (unbounded %+v), want %d read, 5 past the stop, 5 fewer applied", cut, all, total)
	}
}

// --until naming a topic partition the replay does not read is refused
// naming the topics it reads, in one order run after run (they came from a
// map: the order changed from one run to the next).
func TestReplayUntilUnknownPartitionNamesTopicsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, _, _ := sampleLog(ctx, t, broker.Config{Partitions: 1})
	pos := projections.Position{Topic: "chronicle.nope", Partition: 0, Offset: 0}
	var first string
	for i := 0; i < 8; i++ {
		store, err := projections.Open(t.TempDir(), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Until: processors.Until{Pos: &pos},
			Processors: []processors.Processor{sessions.Processor{}, sessions.PatternsProcessor{}, toolgraph.Processor{}, memories.Processor{}}})
		store.Close()
		if err == nil || !strings.Contains(err.Error(), "no such topic partition among") {
			t.Fatalf("replay --until %s: %v, want a refusal naming the topics", pos, err)
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("run %d: %q; run 0: %q", i, err, first)
		}
	}
	// a partition the topic does not have: its count (it listed every
	// topic: an operator's walkthrough, 2026-12-06)
	pos = projections.Position{Topic: "chronicle.sessions", Partition: 7, Offset: 1}
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Until: processors.Until{Pos: &pos},
		Processors: []processors.Processor{sessions.Processor{}}})
	if err == nil || !strings.Contains(err.Error(), "chronicle.sessions has partitions 0 to 0 only") {
		t.Fatalf("replay --until %s: %v, want the topic's partition count", pos, err)
	}
}

// Replay's progress counts offsets, so it ends at its total though the log
// holds a transaction marker, which no applied record counts (a fenced
// relay writes in transactions): `chronicle replay` on a cluster's log
// ended its bar at 93% (14 of 15), found by an operator's walkthrough.
func TestReplayProgressReachesItsTotal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 1})
	publishRecords(ctx, t, prod, recs[:2])
	// one more event of the first session, written in a transaction: its
	// commit marker takes an offset of its own
	envs, err := taubench.Events(recs[2])
	if err != nil {
		t.Fatal(err)
	}
	rec, err := events.Record(&envs[0])
	if err != nil {
		t.Fatal(err)
	}
	tx, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("replay-progress-test"), kgo.DefaultProduceTopic(string(events.TopicSessions)))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var done, total int64
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}},
		Progress: func(d, tot int64) { done, total = d, tot }})
	if err != nil {
		t.Fatal(err)
	}
	if total <= st.Records {
		t.Fatalf("total %d, %d records: the log should hold a transaction marker beyond the records", total, st.Records)
	}
	if done != total {
		t.Fatalf("replay's last progress %d of %d (%d records applied): want its total", done, total, st.Records)
	}
}

// Replay into a store that applied records already is refused naming
// ErrStoreNotEmpty and an offset it holds: it took the log's records again
// from offset 0, each a Duplicate or AlreadyApplied that changed nothing,
// and returned the store as it was, as though it were the log's replay
// (left out by a Go-package walkthrough). A nil store is refused too.
func TestReplayIntoAStoreWithOffsetsIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 1})
	publishRecords(ctx, t, prod, recs[:3])
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}}
	if _, err := processors.Replay(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err = processors.Replay(ctx, cfg)
	if !errors.Is(err, processors.ErrStoreNotEmpty) || !strings.Contains(err.Error(), "sessions/") {
		t.Fatalf("second replay into the same store: %v, want ErrStoreNotEmpty naming an offset", err)
	}
	cfg.Store = nil
	if _, err := processors.Replay(ctx, cfg); err == nil || !strings.Contains(err.Error(), "ReplayConfig.Store") {
		t.Fatalf("nil store: %v, want an error naming ReplayConfig.Store", err)
	}
}
