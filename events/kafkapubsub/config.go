package kafkapubsub

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrInvalidConfig is wrapped by every error returned from
// PublisherConfig.Validate and SubscriberConfig.Validate (and therefore by
// NewPublisher and NewSubscriber for a bad configuration).
var ErrInvalidConfig = errors.New("kafkapubsub: invalid config")

// NoSleep can be used as SubscriberConfig.NackResendSleep to redeliver a
// Nacked message immediately.
const NoSleep time.Duration = -1

// Defaults applied to zero-valued config fields.
const (
	// DefaultMaxAttempts is the default PublisherConfig.MaxAttempts.
	DefaultMaxAttempts = 5
	// DefaultInitialBackoff is the default PublisherConfig.InitialBackoff.
	DefaultInitialBackoff = 100 * time.Millisecond
	// DefaultNackResendSleep is the default SubscriberConfig.NackResendSleep.
	DefaultNackResendSleep = 100 * time.Millisecond
	// DefaultLeaveTimeout is the default SubscriberConfig.LeaveTimeout.
	DefaultLeaveTimeout = 5 * time.Second
)

// PublisherConfig configures a Publisher. Zero-valued fields take the
// documented defaults (applied by NewPublisher); Validate reports the first
// invalid field.
type PublisherConfig struct {
	// Brokers are the seed brokers as host:port. Required.
	Brokers []string

	// Marshaler turns a Watermill message into a kgo.Record.
	// Default: DefaultMarshaler{}.
	Marshaler Marshaler

	// ExtraOpts are appended to the franz-go client options, after the
	// publisher's own (kgo.SeedBrokers, kgo.RequiredAcks(kgo.AllISRAcks()),
	// kgo.RecordDeliveryTimeout(10s), a logger forwarding franz-go warnings
	// and errors), so they can override them. Default: none. The producer
	// is idempotent (franz-go's default); kgo.DisableIdempotentWrite or
	// weaker kgo.RequiredAcks here void Publish's acknowledgement
	// guarantee. The client never auto-creates topics unless
	// kgo.AllowAutoTopicCreation is passed here.
	ExtraOpts []kgo.Opt

	// MaxAttempts bounds the produce attempts of one Publish call,
	// including the first. Each retry resends only the records the broker
	// did not acknowledge. Default: 5; must be ≥ 1.
	MaxAttempts int

	// InitialBackoff is the wait before the second attempt; later waits
	// grow exponentially (backoff/v4, factor 2, ±50% jitter).
	// Default: 100ms; must be > 0.
	InitialBackoff time.Duration
}

func (c *PublisherConfig) setDefaults() {
	if c.Marshaler == nil {
		c.Marshaler = DefaultMarshaler{}
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
}

// Validate reports the first invalid field of c as an error wrapping
// ErrInvalidConfig. It does not apply defaults: a zero Marshaler,
// MaxAttempts or InitialBackoff is valid (NewPublisher fills them in).
func (c PublisherConfig) Validate() error {
	if err := validateBrokers(c.Brokers); err != nil {
		return fmt.Errorf("%w: PublisherConfig.%w", ErrInvalidConfig, err)
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("%w: PublisherConfig.MaxAttempts must be ≥ 1, got %d", ErrInvalidConfig, c.MaxAttempts)
	}
	if c.InitialBackoff < 0 {
		return fmt.Errorf("%w: PublisherConfig.InitialBackoff must be > 0, got %s", ErrInvalidConfig, c.InitialBackoff)
	}
	return nil
}

// SubscriberConfig configures a Subscriber. Zero-valued fields take the
// documented defaults (applied by NewSubscriber); Validate reports the first
// invalid field.
type SubscriberConfig struct {
	// Brokers are the seed brokers as host:port. Required.
	Brokers []string

	// ConsumerGroup is the Kafka consumer group every Subscribe call joins.
	// Offsets are committed to it on Ack, and a group member starts a
	// partition at the committed offset (or at the start of the log when
	// nothing is committed). Empty (the default) means no group: every
	// Subscribe call reads all partitions from the start of the log,
	// independently of any other subscription, and commits nothing.
	// Every Subscribe call is a separate group member; members of a group
	// rebalance together even when they consume different topics, so a
	// message left un-Acked on one subscription delays the rebalances of
	// all of them.
	ConsumerGroup string

	// Unmarshaler turns a kgo.Record into a Watermill message.
	// Default: DefaultMarshaler{}. A record it fails to unmarshal is logged
	// as an error and skipped (and, with a group, committed), since
	// redelivering it could never succeed.
	Unmarshaler Unmarshaler

	// ExtraOpts are appended to the franz-go client options of every
	// subscription, after the subscriber's own (kgo.SeedBrokers,
	// kgo.ConsumeTopics, kgo.ConsumeResetOffset at the start of the log,
	// kgo.FetchMaxWait(500ms), a logger forwarding franz-go warnings and
	// errors, and the group options below), so they can override them (for
	// example kgo.FetchMaxWait or kgo.HeartbeatInterval). Overriding
	// kgo.ConsumeTopics, kgo.ConsumerGroup, kgo.BlockRebalanceOnPoll,
	// kgo.DisableAutoCommit or kgo.AdjustFetchOffsetsFn breaks the
	// delivery guarantees. Only the connection options among them (not
	// producer, consumer or group options) are used by SubscribeInitialize.
	// Default: none.
	ExtraOpts []kgo.Opt

	// NackResendSleep is how long a Nacked message waits before it is
	// delivered again. Default: 100ms; NoSleep redelivers immediately.
	NackResendSleep time.Duration

	// CommitInterval, when positive and with a ConsumerGroup, makes an Ack
	// only mark the record; franz-go commits the marks every
	// CommitInterval (kgo.AutoCommitMarks). This saves a commit round trip
	// per message at the price of a group offset up to CommitInterval
	// behind: after a crash up to that much is delivered again. Use it when
	// the consumer keeps its own offsets (Chronicle's processors store them
	// in Pebble with their projections and start from those via
	// InitialOffsets). Default 0: every Ack is committed synchronously.
	CommitInterval time.Duration

	// InitialOffsets, when set, is asked for every partition of a
	// subscribed topic: when the partition is assigned to a group member,
	// or, without a group, when the subscription first sees records of it.
	// If it returns ok, consumption of that partition starts at offset
	// next (the offset of the first record to deliver), overriding the
	// group's committed offset; records below next are never delivered.
	// If it returns !ok, the partition starts at the start of the log:
	// with InitialOffsets set the group's committed offset is never a
	// start position, since it may have been committed by another member
	// (another instance, with its own state) and starting there would
	// skip every record below it. With a group, it is called from
	// franz-go's group management goroutine and must be fast and safe for
	// concurrent use. Default: nil.
	InitialOffsets func(topic string, partition int32) (next int64, ok bool)

	// Skip, when set, is asked about every record before it is
	// unmarshaled: a record it skips is never delivered and counts as
	// acknowledged (committed like an Ack). A consumer that handles a few
	// event types of a busy topic skips the others here, without a message
	// per record. Default: nil, every record is delivered.
	Skip func(*kgo.Record) bool

	// LeaveTimeout bounds how long a group member's end (Close, or the
	// end of Subscribe's ctx) waits for franz-go's graceful leave. That
	// leave waits for a rebalance in flight to complete (franz-go issues
	// JoinGroup and SyncGroup with the client's own context, which its
	// Close cancels only after the leave), and the broker holds a
	// JoinGroup until every member rejoined or the group's rebalance
	// timeout passed (60 s by default): members stopping together wait
	// for each other. Past LeaveTimeout the member's requests are cut and
	// it leaves the group with a LeaveGroup of its own (at most
	// LeaveTimeout more); the revoke's final commit may be lost, so
	// Acked messages since the last commit (at most CommitInterval's
	// worth) may be delivered again. A synchronous commit in flight when
	// the member ends (an Ack's) waits at most LeaveTimeout more before
	// the leave starts. Worst case, a stop takes four LeaveTimeouts (20 s
	// by default): the commit in flight, the graceful leave, the member's
	// own LeaveGroup and the client's close after the cut (CloseMember);
	// typically it takes well under one.
	// Default DefaultLeaveTimeout (5 s); must be ≥ 0.
	LeaveTimeout time.Duration
}

func (c *SubscriberConfig) setDefaults() {
	if c.Unmarshaler == nil {
		c.Unmarshaler = DefaultMarshaler{}
	}
	if c.NackResendSleep == 0 {
		c.NackResendSleep = DefaultNackResendSleep
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = DefaultLeaveTimeout
	}
}

// Validate reports the first invalid field of c as an error wrapping
// ErrInvalidConfig. It does not apply defaults: a zero Unmarshaler or
// NackResendSleep is valid (NewSubscriber fills them in).
func (c SubscriberConfig) Validate() error {
	if err := validateBrokers(c.Brokers); err != nil {
		return fmt.Errorf("%w: SubscriberConfig.%w", ErrInvalidConfig, err)
	}
	if c.NackResendSleep < 0 && c.NackResendSleep != NoSleep {
		return fmt.Errorf("%w: SubscriberConfig.NackResendSleep must be ≥ 0 or NoSleep, got %s", ErrInvalidConfig, c.NackResendSleep)
	}
	if c.LeaveTimeout < 0 {
		return fmt.Errorf("%w: SubscriberConfig.LeaveTimeout must be ≥ 0, got %s", ErrInvalidConfig, c.LeaveTimeout)
	}
	return nil
}

func validateBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("Brokers: at least one broker is required")
	}
	for i, b := range brokers {
		if b == "" {
			return fmt.Errorf("Brokers[%d] is empty", i)
		}
	}
	return nil
}
