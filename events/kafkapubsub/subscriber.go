package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// ErrSubscriberClosed is returned by Subscribe and SubscribeInitialize once
// Close has been called.
var ErrSubscriberClosed = errors.New("kafkapubsub: subscriber closed")

const (
	// maxPollRecords bounds one poll, and therefore how long a group member
	// blocks rebalances (it processes a whole poll before allowing one).
	maxPollRecords = 100
	// commitTimeout bounds the synchronous offset commit after an Ack.
	commitTimeout = 10 * time.Second
	// pollErrorBackoff is the pause after a poll that returned only errors.
	pollErrorBackoff = 500 * time.Millisecond
	// fetchMaxWait is how long the broker may hold a fetch without data
	// (Kafka's Java default; franz-go's 5s default delays a partition that
	// is assigned while an idle fetch is outstanding by up to 5s).
	fetchMaxWait = 500 * time.Millisecond
	// initializeTimeout bounds SubscribeInitialize.
	initializeTimeout = 30 * time.Second
)

// Subscriber is a Watermill message.Subscriber consuming from Kafka. Every
// Subscribe call runs its own franz-go client. It is safe for concurrent
// use.
type Subscriber struct {
	cfg    SubscriberConfig
	logger watermill.LoggerAdapter

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed against subs.Add, and live
	closed bool
	subs   sync.WaitGroup
	live   map[*subscription]struct{} // running subscriptions (ForceRebalance)
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber applies the defaults to cfg and validates it. A nil logger
// discards logs. It fails with an error wrapping ErrInvalidConfig for a bad
// cfg. It does not contact the brokers.
func NewSubscriber(cfg SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Subscriber{
		cfg:    cfg,
		logger: orNop(logger),
		ctx:    ctx,
		cancel: cancel,
	}, nil
}

// Subscribe starts consuming topic with a new franz-go client (with a
// consumer group, a new group member) and returns the channel on which its
// messages are delivered, one at a time: the next message is sent only
// after the previous one was Acked, so the messages of a partition arrive in
// log order; a Nacked one is sent again (as a fresh copy) after
// SubscriberConfig.NackResendSleep. With a consumer group, the offset of
// every Acked message is committed, synchronously, before the next message
// is sent; without one, the whole topic is read from the start of the log.
// The context of a delivered message carries the values of ctx and is
// canceled once the message is Acked or Nacked, or when the subscription
// ends.
//
// The channel is closed, and the client closed (leaving the group), when
// ctx is canceled or the Subscriber is closed. Subscribe returns
// ErrSubscriberClosed after Close, or the franz-go client's error for
// invalid ExtraOpts; it does not wait for the brokers.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic == "" {
		return nil, errors.New("kafkapubsub: subscribe: empty topic")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSubscriberClosed
	}
	s.subs.Add(1)
	s.mu.Unlock()

	subCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	sub := &subscription{
		topic: topic,
		cfg:   &s.cfg,
		logger: s.logger.With(watermill.LogFields{
			"topic":          topic,
			"consumer_group": s.cfg.ConsumerGroup,
		}),
		ctx:       subCtx,
		out:       make(chan *message.Message),
		rebalance: make(chan struct{}, 1),
		starts:    make(map[int32]int64),
	}
	if err := sub.newClient(); err != nil {
		stop()
		cancel()
		s.subs.Done()
		return nil, fmt.Errorf("kafkapubsub: create consumer client: %w", err)
	}
	s.mu.Lock()
	if s.live == nil {
		s.live = map[*subscription]struct{}{}
	}
	s.live[sub] = struct{}{}
	s.mu.Unlock()

	go func() {
		defer s.subs.Done()
		defer cancel()
		defer stop()
		defer func() {
			s.mu.Lock()
			delete(s.live, sub)
			s.mu.Unlock()
		}()
		sub.run()
	}()
	return sub.out, nil
}

// ForceRebalance makes every group member of this Subscriber's running
// subscriptions rejoin its group (franz-go's Client.ForceRebalance), so
// that the group's leader balances the partitions again: for a balancer
// whose plan depends on something outside the group (the processors'
// Runner has its workers' partitions follow the engine's). A no-op without
// a consumer group or subscriptions.
func (s *Subscriber) ForceRebalance() {
	s.mu.Lock()
	clients := make([]*kgo.Client, 0, len(s.live))
	for sub := range s.live {
		if cl := sub.current.Load(); cl != nil && sub.grouped() {
			clients = append(clients, cl)
		}
	}
	s.mu.Unlock()
	for _, cl := range clients {
		cl.ForceRebalance()
	}
}

// SubscribeInitialize creates topic with the brokers' default partition
// count and replication factor (which needs Kafka 2.4 or later) if it does
// not exist yet; it implements message.SubscribeInitializer. It returns
// ErrSubscriberClosed after Close, and the broker's error (other than
// TOPIC_ALREADY_EXISTS) otherwise; it gives up after 30s.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.ctx.Err() != nil {
		return ErrSubscriberClosed
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.WithLogger(kgoLogger{logger: s.logger, gate: &repeatGate{}}),
	}
	opts = append(opts, connectionOpts(s.cfg.ExtraOpts)...)
	client, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return fmt.Errorf("kafkapubsub: create admin client: %w", err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(s.ctx, initializeTimeout)
	defer cancel()
	_, err = kadm.NewClient(client).CreateTopic(ctx, -1, -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if s.ctx.Err() != nil {
			return ErrSubscriberClosed
		}
		return fmt.Errorf("kafkapubsub: create topic %q: %w", topic, err)
	}
	return nil
}

// connectionOpts drops producer, consumer and group options.
func connectionOpts(opts []kgo.Opt) []kgo.Opt {
	var out []kgo.Opt
	for _, o := range opts {
		switch o.(type) {
		case kgo.ProducerOpt, kgo.ConsumerOpt, kgo.GroupOpt:
			continue
		}
		out = append(out, o)
	}
	return out
}

// Close ends all subscriptions: their output channels are closed and their
// franz-go clients closed (group members leave the group). A message in
// flight is abandoned, not committed, unless it was already Acked. Close
// waits for all of that, is idempotent and always returns nil.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()

	s.cancel()
	s.subs.Wait()
	return nil
}
