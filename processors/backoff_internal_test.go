package processors

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyCounter counts the events of every record key of chronicle.sessions.
type keyCounter struct{}

func (keyCounter) Name() string           { return "keycount" }
func (keyCounter) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (keyCounter) StatePerKey() bool      { return true }

func (keyCounter) Apply(tx *projections.Tx, env *events.Envelope) error {
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	n := 0
	if raw, ok, err := tx.Get("c/" + key); err != nil {
		return err
	} else if ok {
		n, _ = strconv.Atoi(string(raw))
	}
	return tx.Set("c/"+key, []byte(strconv.Itoa(n+1)))
}

// TestStoreFailureBacksOffOnePartition drives the engine's path for a
// transient failure (issue 10 item 7), which no other test reaches: every
// batch of partition 1 fails as a store failure would, until the other
// three partitions have been applied to their end — so they must not wait
// for it — then the failures stop. Partition 1 is retried MaxRetries
// times, paused with backoff and rewound to its stored offset (at least
// twice: more failures than one apply's retries), and in the end every
// event of every partition is counted exactly once (no record skipped by
// the rewind, none applied twice) and nothing is dead-lettered.
func TestStoreFailureBacksOffOnePartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer brk.Close()
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, r := range recs[:40] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		for i := range envs {
			k, err := events.Key(&envs[i])
			if err != nil {
				t.Fatal(err)
			}
			want[k]++
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	l, err := adm.ListEndOffsets(ctx, string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	if ends[1] == 0 {
		t.Fatalf("no record on partition 1: %v", ends)
	}

	var failing atomic.Bool
	var failures atomic.Int64
	failing.Store(true)
	real := engineApplyBatch
	engineApplyBatch = func(store *projections.Store, p Processor, items []projections.Item) ([]projections.Outcome, error) {
		if items[0].Pos.Partition == 1 && failing.Load() {
			failures.Add(1)
			return nil, errors.New("injected store failure")
		}
		return real(store, p, items)
	}
	defer func() { engineApplyBatch = real }()

	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := NewRunner(RunnerConfig{Brokers: brk.Addrs(), Store: store, Processors: []Processor{keyCounter{}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { _ = r.Close(); <-done }()

	reached := func(p int32) bool {
		n, _ := store.NextOffset("keycount", string(events.TopicSessions), p)
		return n >= ends[p]
	}
	wait := func(within time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				next := map[int32]int64{}
				for p := range ends {
					next[p], _ = store.NextOffset("keycount", string(events.TopicSessions), p)
				}
				t.Fatalf("%s: not within %s (stored offsets %v, ends %v, %d failures injected)", what, within, next, ends, failures.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait(30*time.Second, "partitions 0, 2 and 3 applied while partition 1 fails", func() bool { return reached(0) && reached(2) && reached(3) })
	if reached(1) {
		t.Fatal("partition 1 reached its end while every batch of it failed")
	}
	// more failures than one apply's 1 + MaxRetries calls: the partition
	// was paused, rewound and resumed at least once
	wait(30*time.Second, "partition 1 paused and resumed", func() bool { return failures.Load() > 2*int64(1+3) })
	failing.Store(false)
	wait(30*time.Second, "partition 1 applied once the failures stop", func() bool { return reached(1) })

	total := 0
	for k, n := range want {
		raw, ok, err := store.Get("keycount", "c/"+k)
		if err != nil || !ok {
			t.Fatalf("key %s: no count (%v)", k, err)
		}
		if got, _ := strconv.Atoi(string(raw)); got != n {
			t.Errorf("key %s counted %d times, want %d", k, got, n)
		}
		total += n
	}
	dl, err := adm.ListEndOffsets(ctx, string(events.TopicDeadLetter))
	if err != nil {
		t.Fatal(err)
	}
	dl.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			t.Errorf("dead-letter partition %d holds %d records: a store failure is not a rejection", o.Partition, o.Offset)
		}
	})
	t.Logf("%d events of %d keys counted once each; %d failures injected on partition 1", total, len(want), failures.Load())
}
