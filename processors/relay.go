package processors

import (
	"context"
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
	// Idle is the poll interval when no notification arrives (default 200 ms).
	Idle time.Duration
	// OnError, when set, is told about produce failures; the relay retries.
	OnError func(error)
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
	pending, err := r.Store.PendingOutbox(r.Batch)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	recs := make([]*kgo.Record, len(pending))
	for i, p := range pending {
		recs[i] = &kgo.Record{
			Topic:   p.Topic,
			Key:     []byte(p.Key),
			Value:   p.Value,
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte(events.ContentTypeCloudEvents)}},
		}
		if p.Headers != nil { // a dead-letter record keeps the original's headers
			recs[i].Headers = make([]kgo.RecordHeader, len(p.Headers))
			for j, h := range p.Headers {
				recs[i].Headers[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
			}
		}
	}
	if err := r.Producer.ProduceRecords(ctx, recs); err != nil {
		return 0, err
	}
	return len(pending), r.Store.AckOutbox(pending)
}
