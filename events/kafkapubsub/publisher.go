package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/cenkalti/backoff/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// ErrPublisherClosed is returned (possibly wrapped) by Publish once Close
// has been called, including by a Publish call that Close interrupted.
var ErrPublisherClosed = errors.New("kafkapubsub: publisher closed")

// recordDeliveryTimeout bounds how long the franz-go client tries to deliver
// one record within one attempt (kgo.RecordDeliveryTimeout).
const recordDeliveryTimeout = 10 * time.Second

// Publisher is a Watermill message.Publisher producing to Kafka through one
// franz-go client. It is safe for concurrent use.
type Publisher struct {
	cfg    PublisherConfig
	logger watermill.LoggerAdapter
	client *kgo.Client

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc

	mu       sync.RWMutex // guards closed against inflight.Add
	closed   bool
	inflight sync.WaitGroup
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher applies the defaults to cfg, validates it and creates the
// franz-go client (idempotent producer, acks=all). A nil logger discards
// logs. It fails with an error wrapping ErrInvalidConfig for a bad cfg, or
// with the client's error for invalid ExtraOpts. It does not contact the
// brokers.
func NewPublisher(cfg PublisherConfig, logger watermill.LoggerAdapter) (*Publisher, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger = orNop(logger)

	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(recordDeliveryTimeout),
		kgo.WithLogger(kgoLogger{logger: logger, gate: &repeatGate{}}),
	}
	opts = append(opts, cfg.ExtraOpts...)
	client, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkapubsub: create producer client: %w", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	return &Publisher{
		cfg:    cfg,
		logger: logger,
		client: client,
		ctx:    ctx,
		cancel: cancel,
	}, nil
}

// Publish produces msgs to topic, in order, and returns only once the broker
// acknowledged all of them. A message's record key is its MetadataKey
// metadata entry when that is non-empty and the Marshaler set no key, so
// messages sharing a key keep their order in one partition. Records that
// fail with a retriable error are produced again, up to
// PublisherConfig.MaxAttempts attempts in total with exponential backoff.
// Other failures are returned without another attempt: among them a missing
// topic (reported once the client's own metadata retries are exhausted,
// after about a second), an oversized record and a closed publisher. On
// error some of the messages may have been written: publishing them again
// can produce duplicates.
//
// It returns ErrPublisherClosed after Close, and an error wrapping the
// Marshaler's error without producing anything if a message cannot be
// marshaled.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrPublisherClosed
	}
	p.inflight.Add(1)
	p.mu.RUnlock()
	defer p.inflight.Done()

	if topic == "" {
		return errors.New("kafkapubsub: publish: empty topic")
	}
	if len(msgs) == 0 {
		return nil
	}

	records := make([]*kgo.Record, len(msgs))
	for i, msg := range msgs {
		rec, err := Record(p.cfg.Marshaler, topic, msg)
		if err != nil {
			return err
		}
		records[i] = rec
	}

	err := p.produce(records)
	if err == nil {
		return nil
	}
	if p.ctx.Err() != nil {
		return fmt.Errorf("%w: publish to %q interrupted: %w", ErrPublisherClosed, topic, err)
	}
	return fmt.Errorf("kafkapubsub: publish %d message(s) to %q: %w", len(msgs), topic, err)
}

// produce produces records with retries. Every attempt sends fresh copies
// of the records not yet acknowledged, in their original order, so that
// records sharing a key keep their order.
func (p *Publisher) produce(records []*kgo.Record) error {
	pending := make([]int, len(records)) // indexes into records
	for i := range pending {
		pending[i] = i
	}

	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = p.cfg.InitialBackoff
	bo.Multiplier = 2
	bo.MaxElapsedTime = 0
	policy := backoff.WithMaxRetries(backoff.WithContext(bo, p.ctx), uint64(p.cfg.MaxAttempts-1))

	attempt := 0
	op := func() error {
		attempt++
		batch := make([]*kgo.Record, len(pending))
		index := make(map[*kgo.Record]int, len(pending))
		for i, idx := range pending {
			tmpl := records[idx]
			batch[i] = &kgo.Record{
				Topic:     tmpl.Topic,
				Key:       tmpl.Key,
				Value:     tmpl.Value,
				Headers:   tmpl.Headers,
				Timestamp: tmpl.Timestamp,
				Context:   tmpl.Context,
			}
			index[batch[i]] = idx
		}

		var failed []int
		var firstErr error
		for _, res := range p.client.ProduceSync(p.ctx, batch...) {
			if res.Err != nil {
				failed = append(failed, index[res.Record])
				if firstErr == nil {
					firstErr = res.Err
				}
			}
		}
		if len(failed) == 0 {
			return nil
		}
		slices.Sort(failed) // promises complete per partition, not in input order
		pending = failed
		err := fmt.Errorf("%d of %d record(s) not acknowledged after attempt %d: %w", len(failed), len(records), attempt, firstErr)
		if !retriable(firstErr) {
			return backoff.Permanent(err)
		}
		return err
	}
	notify := func(err error, wait time.Duration) {
		p.logger.Info("Retrying publish", watermill.LogFields{"err": err.Error(), "wait": wait.String()})
	}
	return backoff.RetryNotify(op, policy, notify)
}

// retriable reports whether another produce attempt may succeed after err.
func retriable(err error) bool {
	switch {
	case errors.Is(err, kgo.ErrClientClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		// franz-go already retried the metadata UnknownTopicRetries times.
		return false
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		return true
	}
	return kerr.IsRetriable(err)
}

// Close makes further Publish calls fail with ErrPublisherClosed, interrupts
// running ones (records already in flight may still be written) and closes
// the franz-go client. It waits for running Publish calls to return and is
// idempotent; it always returns nil.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()

	p.cancel()
	p.client.Close()
	p.inflight.Wait()
	return nil
}

// Record is the record Publish produces for msg on topic with marshaler m:
// m's record, its topic set, and its key taken from the MetadataKey
// metadata entry when m set none. Errors are m's, wrapped with the
// message's UUID.
func Record(m Marshaler, topic string, msg *message.Message) (*kgo.Record, error) {
	rec, err := m.Marshal(topic, msg)
	if err != nil {
		return nil, fmt.Errorf("kafkapubsub: marshal message %s: %w", msg.UUID, err)
	}
	rec.Topic = topic
	if rec.Key == nil {
		if key := msg.Metadata.Get(MetadataKey); key != "" {
			rec.Key = []byte(key)
		}
	}
	return rec, nil
}
