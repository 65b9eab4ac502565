// Package processortest runs Chronicle processors as the engine runs
// them, in memory and without a broker, for the tests of a processor of
// one's own (in the manner of goka's tester): events are written to an
// in-memory log and applied at once through processors.ApplyPoll (parsed
// and validated once, a TypedProcessor given only its types, a rejection
// dead-lettered), and the derived events and dead letters the processors
// write are relayed into that log and applied in turn, as the outbox
// relay and the live engine would, until nothing is left to relay.
//
//	tt := processortest.New(t, []processors.Processor{myProc{}})
//	outs, err := tt.Publish(env)          // as events.Producer.Publish
//	_, _, _ = tt.Store.Get("myproc", key) // the projection's row
//	derived := tt.Emitted()               // derived events since the last call
//	letters := tt.DeadLetters()           // dead-letter records since the last call
//	processortest.CheckReplay(t, tt)      // a replay of the log, cut into polls two ways, gives tt.Store's digest
//
// Open does the same outside a test (Example), returning errors.
//
// Each event is its own poll (the live engine batches several, with the
// same result: ApplyBatch re-applies one by one around a rejection).
// Workers (processors.Worker: calls to a model, outputs in Kafka
// transactions) are not run; their output events, of derived types that
// Publish refuses as a producer does, can be written with PublishRecord
// (events.Record of the event). Since 2026-12-05; before, a processor of one's own was tested
// through projections.Store.Apply, which checks no schema and relays
// nothing.
package processortest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

// Epoch is the timestamp of the tester's first record; each record
// written after it is one millisecond later. A record's timestamp stands
// in for an event sent without a time (events.Envelope.TimeFromLog).
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxRelayRounds bounds the relay of derived events in one Publish (1,000
// rounds): processors that keep deriving events from each other's
// derived events end in an error naming the bound, not a test that never
// ends.
const MaxRelayRounds = 1000

// ErrRelayUnbounded is the error of a Publish whose derived events were
// still deriving events after MaxRelayRounds rounds.
var ErrRelayUnbounded = errors.New("processortest: derived events still derive events after MaxRelayRounds rounds")

// Outcomes are the outcomes of one record, by processor Name, for each
// processor that reads its topic (projections.Ignored for a
// TypedProcessor not given the record's type, as the engine skips it).
type Outcomes map[string]projections.Outcome

// Option configures a Tester.
type Option func(*config)

type config struct {
	partitions int
	dir        string
	memory     bool
}

// Partitions sets the partition count of every topic but those of
// events.SinglePartition, which have one (default 1), as
// pipeline.Config.Partitions does. A record goes to its key's partition,
// as Chronicle's producers write it.
func Partitions(n int) Option { return func(c *config) { c.partitions = n } }

// Dir keeps the store in dir instead of a directory of tb.TempDir
// (removed with the test): to look at it after the test, or to give it to
// processors.Replay's digest.
func Dir(dir string) Option { return func(c *config) { c.dir = dir } }

// InMemory keeps the store in memory (Pebble's in-memory filesystem)
// instead of a directory: for a test that opens many testers, as a fuzz
// target does once per input (FuzzBatchSplitsAgree: a store on disk per
// input spent most of its time in the kernel, creating, syncing and
// removing the store's files). Not with Dir.
func InMemory() Option { return func(c *config) { c.memory = true } }

// Tester runs processors over an in-memory log. It is not safe for
// concurrent use.
type Tester struct {
	// Store holds the processors' projections (Store.Get, GetJSON, Scan
	// with the processor's Name), offsets and idempotency keys.
	Store *projections.Store

	procs      []processors.Processor
	partitions int
	log        map[string][][]*kgo.Record // topic → partition → records, derived events and letters included
	clock      time.Time
	emitted    []events.Envelope
	letters    []*kgo.Record
	keys       *keyAccess // CheckStatePerKey
}

// New opens a store for procs (in a directory of tb.TempDir unless Dir or
// InMemory says otherwise; closed when the test ends) and returns their Tester. It
// fails the test for procs that the engine refuses (processors.CheckNames:
// an empty, repeated or '/'-holding Name, a topic or type that is not
// Chronicle's) and for a partition count below 1.
func New(tb testing.TB, procs []processors.Processor, opts ...Option) *Tester {
	tb.Helper()
	cfg := configOf(opts)
	if cfg.dir == "" && !cfg.memory {
		cfg.dir = tb.TempDir()
	}
	t, err := open(procs, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = t.Close() })
	return t
}

// Open is New outside a test (a runnable example, a program of one's own):
// it returns New's refusals as errors, keeps the store in memory unless
// Dir is given, and leaves closing it to Close. (New's need of a
// testing.TB left processortest without a runnable example: a new
// contributor's walkthrough.)
func Open(procs []processors.Processor, opts ...Option) (*Tester, error) {
	cfg := configOf(opts)
	if cfg.dir == "" {
		cfg.memory = true
	}
	return open(procs, cfg)
}

// Close closes the tester's store. A Tester of New is closed when its
// test ends; one of Open must be closed by its caller.
func (t *Tester) Close() error { return t.Store.Close() }

func configOf(opts []Option) config {
	cfg := config{partitions: 1}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

func open(procs []processors.Processor, cfg config) (*Tester, error) {
	if cfg.partitions < 1 {
		return nil, fmt.Errorf("processortest: Partitions(%d): want at least 1", cfg.partitions)
	}
	if err := processors.CheckNames("processortest.New procs", procs); err != nil {
		return nil, err
	}
	var popts projections.Options
	switch {
	case cfg.memory && cfg.dir != "":
		return nil, fmt.Errorf("processortest: InMemory and Dir(%q): a store in memory has no directory", cfg.dir)
	case cfg.memory:
		cfg.dir, popts.FS = "store", vfs.NewMem()
	}
	store, err := projections.Open(cfg.dir, popts)
	if err != nil {
		return nil, fmt.Errorf("processortest: open the store in %s: %w", cfg.dir, err)
	}
	keys := newKeyAccess(procs)
	store.OnRowAccess(keys.access)
	return &Tester{Store: store, procs: procs, partitions: cfg.partitions, log: map[string][][]*kgo.Record{}, clock: Epoch, keys: keys}, nil
}

// Publish writes envs to their topics as events.Producer.Publish writes
// them — every event checked first (events.Checker: a derived type, an
// invalid event or a reused id with other content is refused, and then
// nothing is written) — and applies each, then the derived events and
// dead letters it caused. It returns the outcomes of envs' own records,
// in envs' order. An error other than a refusal is the store's. As on
// every producer path, an event whose time is more than
// events.MaxTimeAhead (1 h) ahead of the host's clock is refused (a
// *events.ValidationError at /time): a test's fixed times belong in the
// past, or left out (events.New with a zero time: the tester's clock,
// Epoch on, stands in).
func (t *Tester) Publish(envs ...events.Envelope) ([]Outcomes, error) {
	var c events.Checker
	recs := make([]*kgo.Record, len(envs))
	for i := range envs {
		r, err := c.Check(&envs[i])
		if err != nil {
			return nil, err
		}
		recs[i] = r
	}
	out := make([]Outcomes, len(recs))
	for i, r := range recs {
		o, err := t.write(r, false)
		if err != nil {
			return out[:i], err
		}
		out[i] = o
	}
	return out, nil
}

// PublishRecord writes r as a client writing straight to Kafka would,
// unchecked (an invalid record is dead-lettered by the processors, as
// live), on r.Topic (one of events.AllTopics, else an error, as the
// broker refuses it) at its key's partition unless r.Partition is set
// with a partition count above 1, and applies it and what it caused. A
// zero r.Timestamp is the tester's clock (Epoch, then a millisecond a
// record).
func (t *Tester) PublishRecord(r *kgo.Record) (Outcomes, error) {
	if err := checkTopic("PublishRecord", r.Topic); err != nil {
		return nil, err
	}
	c := *r
	return t.write(&c, false)
}

// PublishRecordTo is PublishRecord on partition p of r.Topic, 0 included:
// PublishRecord reads a zero r.Partition as "the key's partition", so a
// record whose key hashes elsewhere could not be written to partition 0
// (a Go-package walkthrough). A p outside the topic's partitions is an
// error, nothing written.
func (t *Tester) PublishRecordTo(r *kgo.Record, p int32) (Outcomes, error) {
	if err := checkTopic("PublishRecordTo", r.Topic); err != nil {
		return nil, err
	}
	c := *r
	c.Partition = p
	return t.write(&c, true)
}

// checkTopic refuses an empty topic and one Chronicle does not create, as
// a broker refuses the write (UNKNOWN_TOPIC_OR_PARTITION): a mistyped
// topic applied nothing and answered no error (a new contributor's
// walkthrough).
func checkTopic(call, topic string) error {
	switch {
	case topic == "":
		return fmt.Errorf("processortest: %s: Topic is empty", call)
	case !slices.Contains(events.AllTopics, events.Topic(topic)):
		return fmt.Errorf("processortest: %s: Topic %q is no topic of Chronicle's (events.AllTopics): a broker refuses the write", call, topic)
	}
	return nil
}

// write appends r to the log (at r.Partition when manual), applies it,
// then relays.
func (t *Tester) write(r *kgo.Record, manual bool) (Outcomes, error) {
	o, err := t.append(r, manual)
	if err != nil {
		return o, err
	}
	return o, t.relay()
}

// append places r in its topic partition's log at the next offset and
// applies it through the processors of its topic.
func (t *Tester) append(r *kgo.Record, manual bool) (Outcomes, error) {
	n := t.partitionsOf(r.Topic)
	if !manual && (r.Partition == 0 || n == 1) {
		r.Partition = events.Partition(r.Topic, string(r.Key), n)
	}
	if r.Partition < 0 || int(r.Partition) >= n {
		return nil, fmt.Errorf("processortest: record on %s partition %d: the topic has %d", r.Topic, r.Partition, n)
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = t.clock
	}
	t.clock = t.clock.Add(time.Millisecond)
	parts := t.log[r.Topic]
	if parts == nil {
		parts = make([][]*kgo.Record, n)
		t.log[r.Topic] = parts
	}
	r.Offset = int64(len(parts[r.Partition]))
	parts[r.Partition] = append(parts[r.Partition], r)
	byName, err := processors.ApplyPoll(t.Store, t.procs, n, []*kgo.Record{r})
	if err != nil {
		return nil, err
	}
	out := make(Outcomes, len(byName))
	for name, outs := range byName {
		out[name] = outs[0]
	}
	return out, nil
}

// partitionsOf is topic's partition count: Partitions, or 1 for the
// topics Chronicle creates with one (events.SinglePartition).
func (t *Tester) partitionsOf(topic string) int {
	if events.SinglePartition[events.Topic(topic)] {
		return 1
	}
	return t.partitions
}

// relay moves the store's outbox (derived events, dead letters) into the
// log, applying each record, until it is empty.
func (t *Tester) relay() error {
	for round := 0; ; round++ {
		pending, err := t.Store.PendingOutbox(1 << 10)
		if err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		if round == MaxRelayRounds {
			return fmt.Errorf("%w (%d rounds; %d rows pending)", ErrRelayUnbounded, MaxRelayRounds, len(pending))
		}
		if err := t.Store.AckOutbox(pending); err != nil {
			return err
		}
		for _, r := range processors.OutboxRecords(pending) {
			r.Partition = 0
			if r.Topic == string(events.TopicDeadLetter) {
				t.letters = append(t.letters, r)
			} else {
				env, err := events.FromRecord(r)
				if err != nil {
					return fmt.Errorf("processortest: a derived event on %s does not parse: %w", r.Topic, err)
				}
				t.emitted = append(t.emitted, env)
			}
			if _, err := t.append(r, false); err != nil {
				return err
			}
		}
	}
}

// Emitted returns the derived events the processors wrote since the last
// call, in the order they were relayed.
func (t *Tester) Emitted() []events.Envelope {
	out := t.emitted
	t.emitted = nil
	return out
}

// DeadLetters returns the dead-letter records the processors wrote since
// the last call (the original record's key, value and headers, plus
// processors.HeaderError with the reason and the original topic,
// partition and offset), in the order they were relayed.
func (t *Tester) DeadLetters() []*kgo.Record {
	out := t.letters
	t.letters = nil
	return out
}

// Records returns what the log holds on topic, every partition's records
// in partition then offset order: the events written, the derived events
// and the dead letters.
func (t *Tester) Records(topic events.Topic) []*kgo.Record {
	var out []*kgo.Record
	for _, p := range t.log[string(topic)] {
		out = append(out, p...)
	}
	return out
}
