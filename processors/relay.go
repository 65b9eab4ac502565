package processors

import (
	"context"
	"errors"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Relay moves derived events from the store's outbox to Kafka. A record is
// removed from the outbox only after the broker acknowledged it; a crash in
// between re-sends it with the same CloudEvents id, which consumers drop as
// a duplicate.
type Relay struct {
	Store    *projections.Store
	Producer *events.Producer
	// Batch is the most records produced at once (default 500).
	Batch int
	// Idle is the poll interval when no notification arrives (default
	// 200 ms), and the wait after a failed round.
	Idle time.Duration
	// OnError, when set, is told about produce failures; the relay retries.
	OnError func(error)
	// Fence, when set, relays the engine's derived events transactionally
	// per source partition, so an instance that lost a partition cannot
	// write for it (see Fence; a Deferred one only from Arm on). Nil:
	// every row is relayed as it comes and no relayed frontier is kept,
	// which is right only for a process that is and stays alone.
	Fence *Fence
}

// Run relays until ctx ends. It returns nil on cancellation.
func (r *Relay) Run(ctx context.Context) error {
	if r.Batch == 0 {
		r.Batch = 500
	}
	if r.Idle == 0 {
		r.Idle = 200 * time.Millisecond
	}
	t := time.NewTicker(r.Idle)
	defer t.Stop()
	if r.Fence != nil {
		defer r.Fence.close()
	}
	for {
		n, err := r.Once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && r.OnError != nil {
			r.OnError(err)
		}
		if n == r.Batch && err == nil {
			continue
		}
		if err != nil {
			// a failed round waits for the ticker, not for the next
			// commit: a broker that refuses a row for good answers at
			// once (events.ErrRefused, a record too large), and each
			// commit of a busy engine would otherwise start another
			// round against it, refused again
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Store.OutboxNotify():
		case <-t.C:
		}
	}
}

// Once relays up to Batch pending records and returns how many it relayed.
func (r *Relay) Once(ctx context.Context) (int, error) {
	if r.Batch == 0 {
		r.Batch = 500
	}
	if r.Fence != nil {
		return r.Fence.once(ctx, r)
	}
	pending, err := r.Store.PendingOutbox(r.Batch)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	return r.produceAndAck(ctx, pending)
}

// produceAndAck produces entries and takes out of the outbox those the
// broker acknowledged, also when others failed, which stay to be sent
// again: it returns how many left the outbox. Before, a failure acked
// none, so one record the broker refuses for good (a dead letter above
// its limit) put every other record of the call in the log again each
// round: a walkthrough counted a memory.created.v1 245 times on the
// learned stream in a minute.
func (r *Relay) produceAndAck(ctx context.Context, entries []projections.OutboxEntry) (int, error) {
	recs := OutboxRecords(entries)
	err := r.Producer.ProduceRecords(ctx, recs)
	if err == nil {
		return len(entries), r.Store.AckOutbox(entries)
	}
	var pe *events.ProduceError
	if !errors.As(err, &pe) {
		return 0, err
	}
	failed := make(map[*kgo.Record]bool, len(pe.Failed))
	for _, f := range pe.Failed {
		failed[f] = true
	}
	acked := make([]projections.OutboxEntry, 0, len(entries))
	for i, rec := range recs {
		if !failed[rec] {
			acked = append(acked, entries[i])
		}
	}
	if len(acked) > 0 {
		if aerr := r.Store.AckOutbox(acked); aerr != nil {
			return 0, errors.Join(err, aerr)
		}
	}
	return len(acked), err
}
