package processors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StreamingWorker is implemented by a Worker whose Handle reads back the
// events it writes before it returns: the tree-search ResumeWorker drives
// a search step by step and waits for the projection to apply each step.
// Its outputs cannot wait for one transaction at the end of Handle, so the
// Runner writes each Publish of Handle in a transaction of its own, under
// the same transactional id as the other workers' outputs
// (WorkerTransactionalID), and commits the consumed offset after Handle
// returned, as for an event without outputs. What that gives:
//
//   - No zombie writes: once another member initialised the partition's
//     transactional id (it was assigned the partition), this instance's
//     next step is refused by the broker, nothing of it becomes visible to
//     read_committed consumers, and the event is not dead-lettered (it is
//     handed again after a pause, like a fenced worker's).
//   - A step is visible whole or not at all (a kill inside its
//     transaction: the next owner's takeover aborts it).
//   - Not one transaction for the whole of Handle: a kill after a step
//     committed and before the offset did hands the event to the next
//     owner, which must find its steps done (the ResumeWorker finds the
//     search moved on and leaves it alone); the worker, not the Runner,
//     keeps a step from being written twice then.
//
// Every other worker's outputs are written once with the consumed offset
// (see WorkerTransactionalID).
type StreamingWorker interface {
	Worker
	StreamsOutputs() bool
}

func streams(w Worker) bool {
	s, ok := w.(StreamingWorker)
	return ok && s.StreamsOutputs()
}

// WorkerTransactionalID is the transactional id under which the Runner
// writes worker w's outputs for the events of one partition of its topic:
// "chronicle.worker/<worker group>/<topic>/<partition>".
//
// A worker's outputs are written once, consume–produce exactly-once as
// Kafka Streams' per-task producer (EOS v1) does, in the Runner rather
// than in each worker:
//
//   - When the worker's consumer group assigns this instance a partition,
//     the Runner initialises the partition's transactional id before the
//     partition's committed offset is read: the broker bumps the id's
//     epoch and aborts a transaction the previous owner left open (it
//     was killed between producing and committing), and from then on
//     refuses the previous owner's writes (a paused zombie).
//   - Handle runs with a context whose events.RecordSink collects what the
//     worker publishes (events.Producer hands the sink the records instead
//     of producing them), so a model call is never inside a transaction.
//   - When Handle returns nil, the collected records and the consumed
//     offset + 1 (TxnOffsetCommit to the worker's group) go in one
//     transaction. A kill before its commit leaves nothing visible to
//     read_committed consumers, and the group still at the event: the
//     next owner handles it again and writes its outputs once. A kill
//     after the commit leaves the offset past the event.
//   - Consumers read read_committed (the engine, the workers, replay), and
//     the group's offsets are fetched stable (franz-go's group consumers
//     always ask so; kgo.RequireStableFetchOffsets, a no-op now, was dropped).
//
// A Handle error goes to the dead-letter topic (its outputs dropped) the
// same way: the dead-letter record Watermill's poison queue would publish
// (poisonRecord) and the consumed offset + 1 in one transaction, so an
// event is dead-lettered once, and never by an instance that lost the
// partition. A transaction refused because another member holds the
// id (this instance lost the partition) is not dead-lettered: the event is
// handed again after a pause, and handled by its owner; this instance
// never initialises the id again under the same assignment.
func WorkerTransactionalID(w Worker, partition int32) string {
	return fmt.Sprintf("chronicle.worker/%s/%s/%d", WorkerGroupID(w), w.Topic(), partition)
}

// errLostPartition is a worker transaction refused because another member
// holds the partition's transactional id; such an event is nacked, never
// dead-lettered.
var errLostPartition = errors.New("processors: worker output not written: this instance lost the partition (its transactional id was taken over)")

// workerOnce writes one worker's outputs once (see WorkerTransactionalID).
type workerOnce struct {
	w       Worker
	brokers []string
	timeout time.Duration
	opts    []kgo.Opt // extra options of the transactional producers
	logger  watermill.LoggerAdapter
	// poisoned, when set, is called for each event dead-lettered (the
	// metric countPoisoned keeps for the poison queue)
	poisoned func()
	// written, when set, is called after each committed transaction
	// (RunnerConfig.OnWorkerWrite)
	written func()

	mu        sync.Mutex
	group     *kgo.Client // the subscription's group client (its member id)
	checkedAt time.Time   // the last check of a fenced partition against the group
	parts     map[int32]*onceProducer
	topicID   [16]byte
	hasID     bool
}

type onceProducer struct {
	cl *kgo.Client // nil: fenced, or the initialisation failed, or reinit
	// watch is cl's logger: it tells a transaction franz-go aborted
	// although asked to commit (see silentAbortLog)
	watch *abortWatch
	// reinit: the last transaction is unconfirmed and the client was
	// closed; the next event takes the id over again (stale stays set)
	reinit bool
	// kept: the outputs of the last failed or unconfirmed transaction,
	// written again if their event is handed again and they are not in
	// the log (the model is not called twice for one event)
	kept *keptOutputs
	// stale: a transaction failed without a fence, maybe after the broker
	// committed it (EndTransaction's outcome unknown): before the event is
	// handled again, the group's committed offset says whether it was
	stale bool
}

// keptOutputs are one event's outputs (or its dead letter: herr set).
type keptOutputs struct {
	offset int64
	recs   []kgo.Record
	herr   error
}

// records are fresh copies of the kept records (a produced record is not
// produced again: the client set its partition, offset and timestamp).
func (k *keptOutputs) records() []*kgo.Record {
	out := make([]*kgo.Record, len(k.recs))
	for i, r := range k.recs {
		out[i] = &r // r is a fresh copy each iteration (Go 1.22)
	}
	return out
}

// clientOpts are the worker subscriber's options that make it exactly-once.
func (o *workerOnce) clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(o.assigned),
		kgo.OnPartitionsRevoked(o.revoked),
		kgo.OnPartitionsLost(o.revoked),
	}
}

// assigned initialises the transactional id of every new partition; it
// runs before franz-go reads the partitions' committed offsets.
func (o *workerOnce) assigned(ctx context.Context, group *kgo.Client, added map[string][]int32) {
	o.mu.Lock()
	o.group = group
	o.mu.Unlock()
	for _, parts := range added {
		for _, p := range parts {
			cl, watch, err := o.takeOver(ctx, p)
			if err != nil {
				// handle takes it over before the partition's first output
				o.logger.Error("worker: initialising the partition's transactional id at assignment", err, watermill.LogFields{"worker": o.w.Name(), "partition": p})
			}
			o.mu.Lock()
			if old := o.parts[p]; old != nil && old.cl != nil {
				old.cl.Close()
			}
			if err != nil {
				delete(o.parts, p)
			} else {
				o.parts[p] = &onceProducer{cl: cl, watch: watch}
			}
			o.mu.Unlock()
		}
	}
}

func (o *workerOnce) revoked(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, parts := range gone {
		for _, p := range parts {
			if op := o.parts[p]; op != nil && op.cl != nil {
				op.cl.Close()
			}
			delete(o.parts, p)
		}
	}
}

func (o *workerOnce) takeOver(ctx context.Context, p int32) (*kgo.Client, *abortWatch, error) {
	watch := &abortWatch{}
	opts := append([]kgo.Opt{kgo.SeedBrokers(o.brokers...), kgo.TransactionalID(WorkerTransactionalID(o.w, p)),
		kgo.TransactionTimeout(o.timeout), kgo.RequestTimeoutOverhead(5 * time.Second), kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(30 * time.Second)}, o.opts...)
	opts = append(opts, kgo.WithLogger(watch)) // last: it must see franz-go's silent abort
	cl, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return nil, nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, _, err := cl.ProducerID(ictx); err != nil {
		cl.Close()
		return nil, nil, fmt.Errorf("init producer %s: %w", WorkerTransactionalID(o.w, p), err)
	}
	return cl, watch, nil
}

// handle runs the worker on env with its outputs collected, then writes
// them with the consumed offset in one transaction.
func (o *workerOnce) handle(msg *message.Message, env *events.Envelope) error {
	return o.handleOrDeadLetter(msg, env, nil)
}

// deadLetter writes the dead letter of a record that did not parse (perr:
// the reason) with the consumed offset + 1 in one transaction: once, as
// handle's dead letters, and never from an instance that lost the
// partition.
func (o *workerOnce) deadLetter(msg *message.Message, perr error) error {
	return o.handleOrDeadLetter(msg, nil, perr)
}

// handleOrDeadLetter is handle, or with perr set deadLetter.
func (o *workerOnce) handleOrDeadLetter(msg *message.Message, env *events.Envelope, perr error) error {
	ctx := msg.Context()
	topic := string(o.w.Topic())
	pos, err := messagePosition(msg, topic)
	if err != nil {
		return fmt.Errorf("processors: worker %s: the message's position: %w", o.w.Name(), err)
	}
	p, offset := pos.Partition, pos.Offset
	op, err := o.producer(ctx, p)
	if err != nil {
		return err
	}
	if op.stale {
		// the last transaction's outcome is unknown: if it committed,
		// this event's outputs are in the log already
		done, err := o.committedPast(ctx, op.cl, topic, p, offset)
		if err != nil {
			return fmt.Errorf("%w: %w", errRetryLater, err)
		}
		o.mu.Lock()
		op.stale = false
		o.mu.Unlock()
		o.logger.Info("worker: after a failed transaction, the group's committed offset says whether it was written", watermill.LogFields{"worker": o.w.Name(), "partition": p, "offset": offset, "written": done})
		if done {
			return nil
		}
	}
	var outs []*kgo.Record
	var herr error
	o.mu.Lock()
	kept := op.kept
	op.kept = nil
	o.mu.Unlock()
	if kept != nil && kept.offset == offset {
		// outputs of this event whose transaction failed or is
		// unconfirmed, and not in the log (above): written again as they
		// were, without a second model call
		outs, herr = kept.records(), kept.herr
	} else if perr != nil {
		herr = perr
	} else if streams(o.w) {
		herr = o.handleStreaming(ctx, op, p, env)
		if herr == nil || !poisonous(herr) {
			return herr // the subscription commits the offset
		}
	} else {
		hctx := events.WithRecordSink(ctx, func(recs []*kgo.Record) error {
			outs = append(outs, recs...)
			return nil
		})
		herr = o.w.Handle(hctx, env)
		if herr != nil && !poisonous(herr) {
			return herr
		}
	}
	if herr != nil && kept == nil {
		// the dead letter instead of the outputs, with the offset: once,
		// and never from an instance that lost the partition
		dl, err := poisonRecord(msg, herr)
		if err != nil {
			return errors.Join(herr, err) // the poison queue's turn
		}
		outs = []*kgo.Record{dl}
	}
	if len(outs) == 0 {
		return nil // nothing written: the subscription commits the offset
	}
	id, err := o.id(ctx, op.cl, topic)
	if err != nil {
		return fmt.Errorf("%w: %w", errRetryLater, err)
	}
	err = transactOffset(ctx, op.cl, WorkerTransactionalID(o.w, p), WorkerGroupID(o.w), id, tp{topic, p}, offset+1, outs)
	if err == nil {
		err = confirmOffset(ctx, op.cl, WorkerGroupID(o.w), tp{topic, p}, offset+1)
	}
	if err == nil {
		if o.written != nil {
			o.written()
		}
		if herr != nil {
			// at Debug, as the engine's: serve logs each letter once, when
			// the dead-letter projection applies it (it was logged twice, an
			// ERROR here and a WARN there: an SRE's walkthrough, 2026-11-30)
			o.logger.Debug("worker: event dead-lettered", watermill.LogFields{"worker": o.w.Name(), "partition": p, "offset": offset, "reason": herr.Error()})
			if o.poisoned != nil {
				o.poisoned()
			}
		}
		return nil
	}
	keep := &keptOutputs{offset: offset, herr: herr}
	for _, r := range outs {
		keep.recs = append(keep.recs, kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	o.mu.Lock()
	if errors.Is(err, errTxnUnconfirmed) && o.parts[p] == op {
		// a transaction may be left open under this id: the next
		// producer re-initialises it (aborting that one), and the event,
		// handed again, first looks whether it was written after all
		op.cl.Close()
		o.parts[p] = &onceProducer{reinit: true, stale: true, kept: keep}
		o.mu.Unlock()
		o.logger.Error("worker: the outputs' transaction is unconfirmed; the partition's producer is re-initialised and the event handed again", err, watermill.LogFields{"worker": o.w.Name(), "partition": p, "offset": offset})
		return fmt.Errorf("%w: %w", errRetryLater, err)
	}
	if fenced(err) {
		if o.parts[p] == op {
			op.cl.Close()
			op.cl = nil
		}
		o.mu.Unlock()
		o.logger.Info("worker: fenced on a partition (another member owns it now): its events are left to the owner", watermill.LogFields{"worker": o.w.Name(), "partition": p, "err": err.Error()})
		return o.lost(ctx)
	}
	// a broker failure: the transaction was aborted, or its outcome is
	// unknown; handled again after a look at the committed offset
	op.stale, op.kept = true, keep
	o.mu.Unlock()
	o.logger.Error("worker: writing the outputs failed; the event is handed again", err, watermill.LogFields{"worker": o.w.Name(), "partition": p, "offset": offset})
	return fmt.Errorf("%w: %w", errRetryLater, err)
}

// poisonRecord is the dead-letter record of msg, which its worker failed
// with err: the record Watermill's poison queue publishes through the
// Runner's publisher (the message's metadata with the reason, topic,
// handler and subscriber added, as headers; kafkapubsub.Record with the
// publisher's default marshaler).
func poisonRecord(msg *message.Message, err error) (*kgo.Record, error) {
	m := msg.Copy()
	m.Metadata.Set(middleware.ReasonForPoisonedKey, err.Error())
	m.Metadata.Set(middleware.PoisonedTopicKey, message.SubscribeTopicFromCtx(msg.Context()))
	m.Metadata.Set(middleware.PoisonedHandlerKey, message.HandlerNameFromCtx(msg.Context()))
	m.Metadata.Set(middleware.PoisonedSubscriberKey, message.SubscriberNameFromCtx(msg.Context()))
	return kafkapubsub.Record(kafkapubsub.DefaultMarshaler{}, string(events.TopicDeadLetter), m)
}

// handleStreaming runs a StreamingWorker on env, each of its Publish calls
// one transaction of op's producer; the subscription commits the offset
// after Handle returned nil.
func (o *workerOnce) handleStreaming(ctx context.Context, op *onceProducer, p int32, env *events.Envelope) error {
	hctx := events.WithRecordSink(ctx, func(recs []*kgo.Record) error {
		o.mu.Lock()
		cl := op.cl
		o.mu.Unlock()
		if cl == nil {
			return errLostPartition // fenced by an earlier step of this Handle
		}
		// no offset in this transaction to confirm it by: franz-go's
		// silent abort is caught by its log line instead, and the step
		// is written again
		err := transactWatched(op.watch, func() error { return transact(ctx, cl, recs, nil) })
		if err == nil {
			if o.written != nil {
				o.written()
			}
			return nil
		}
		if errors.Is(err, errSilentAbort) {
			o.logger.Error("worker: a step's transaction was aborted by the Kafka client although asked to commit; the event is handed again", err, watermill.LogFields{"worker": o.w.Name(), "partition": p})
			return fmt.Errorf("%w: %w", errRetryLater, err)
		}
		if fenced(err) {
			o.mu.Lock()
			if o.parts[p] == op && op.cl != nil {
				op.cl.Close()
				op.cl = nil
			}
			o.mu.Unlock()
			o.logger.Info("worker: fenced on a partition (another member owns it now): its events are left to the owner", watermill.LogFields{"worker": o.w.Name(), "partition": p, "err": err.Error()})
			return fmt.Errorf("%w: %w", errLostPartition, err)
		}
		return fmt.Errorf("%w: %w", errRetryLater, err)
	})
	err := o.w.Handle(hctx, env)
	if errors.Is(err, errLostPartition) {
		return o.lost(ctx)
	}
	o.mu.Lock()
	gone := op.cl == nil
	o.mu.Unlock()
	if err != nil && gone {
		return o.lost(ctx) // fenced: the owner dead-letters it, if it must
	}
	return err
}

// producer is partition p's transactional producer: the one taken over at
// assignment, or, when that failed, one taken over now. A fenced
// partition's is errLostPartition, after a pause.
func (o *workerOnce) producer(ctx context.Context, p int32) (*onceProducer, error) {
	o.mu.Lock()
	op := o.parts[p]
	o.mu.Unlock()
	if op != nil && op.cl == nil && !op.reinit && !o.confirmed(ctx, p) {
		return nil, o.lost(ctx) // fenced: no model call for an event another member owns
	}
	if op != nil && op.cl != nil {
		return op, nil
	}
	reinit := op != nil && op.reinit
	var kept *keptOutputs
	if reinit {
		kept = op.kept
	}
	cl, watch, err := o.takeOver(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRetryLater, err)
	}
	op = &onceProducer{cl: cl, watch: watch, stale: reinit, kept: kept}
	o.mu.Lock()
	if old := o.parts[p]; old != nil && old.cl != nil {
		old.cl.Close()
	}
	o.parts[p] = op
	o.mu.Unlock()
	return op, nil
}

// confirmed reports whether the worker's group, in its current Stable
// generation, assigns this member partition p (at most one look a second):
// a partition fenced here and then given back by a cooperative rebalance
// keeps its assignment without a callback, and is taken over again only
// then (its fencer, the previous generation's owner, revoked it first).
func (o *workerOnce) confirmed(ctx context.Context, p int32) bool {
	o.mu.Lock()
	group := o.group
	if group == nil || time.Since(o.checkedAt) < time.Second {
		o.mu.Unlock()
		return false
	}
	o.checkedAt = time.Now()
	o.mu.Unlock()
	member, _ := group.GroupMetadata()
	parts, stable, err := groupAssignment(ctx, group, WorkerGroupID(o.w), member)
	if err != nil || !stable {
		return false
	}
	for _, q := range parts[string(o.w.Topic())] {
		if q == p {
			return true
		}
	}
	return false
}

// lost pauses before the event of a partition this instance lost is handed
// again (the subscription yields to the rebalance that takes it away).
func (o *workerOnce) lost(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	return errLostPartition
}

// errRetryLater marks a failure to write a worker's outputs (a broker
// error, the transaction aborted): the event is handed again, not
// dead-lettered.
var errRetryLater = errors.New("processors: worker outputs not written; the event is handed again")

// ErrRetryLater, wrapped by a Worker's Handle error, says the failure is
// one that waiting can cure (the vector store's server down or restarting):
// the event is not dead-lettered but handed again, after the subscription's
// resend wait (100 ms), until it succeeds or fails otherwise; the worker's
// partition waits meanwhile (its lag, chronicle_worker_lag_records, shows
// it), the other partitions and the processors go on. Handle must bound
// each attempt itself. Before, the pair worker's retrieval during a
// Weaviate outage dead-lettered every evaluation of the window for good
// (a walkthrough, 2026-11-30).
var ErrRetryLater = errRetryLater

func (o *workerOnce) id(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	o.mu.Lock()
	if o.hasID {
		defer o.mu.Unlock()
		return o.topicID, nil
	}
	o.mu.Unlock()
	id, err := lookupTopicID(ctx, cl, topic)
	if err != nil {
		return id, err
	}
	o.mu.Lock()
	o.topicID, o.hasID = id, true
	o.mu.Unlock()
	return id, nil
}

// poisonous reports whether a worker's error goes to the dead-letter
// topic: not a lost partition or an output write to retry.
func poisonous(err error) bool {
	return !errors.Is(err, errLostPartition) && !errors.Is(err, errRetryLater)
}

func (o *workerOnce) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, op := range o.parts {
		if op.cl != nil {
			op.cl.Close()
		}
		delete(o.parts, p)
	}
}

// committedPast reports whether the worker's group has committed an offset
// beyond offset on the partition (stable: a pending transaction's commit
// is waited for).
func (o *workerOnce) committedPast(ctx context.Context, cl *kgo.Client, topic string, p int32, offset int64) (bool, error) {
	resp, err := kadm.NewClient(cl).FetchOffsets(kadm.RequireStable(ctx), WorkerGroupID(o.w))
	if err != nil {
		return false, err
	}
	r, ok := resp.Lookup(topic, p)
	if !ok {
		return false, nil
	}
	if r.Err != nil {
		return false, r.Err
	}
	return r.At > offset, nil
}
