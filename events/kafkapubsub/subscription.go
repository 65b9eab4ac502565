package kafkapubsub

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// subscription is the consume loop of one Subscribe call.
type subscription struct {
	topic  string
	cfg    *SubscriberConfig
	logger watermill.LoggerAdapter
	// repeats holds back repeated fetch and client errors (RepeatWindow)
	repeats repeatGate
	client  *kgo.Client
	// cancelClient cancels client's context (kgo.WithContext): it cuts a
	// leave that waits too long (closeClient)
	cancelClient context.CancelFunc
	// current is client, for other goroutines (Subscriber.ForceRebalance);
	// the run goroutine replaces both when it rejoins with a new client
	current atomic.Pointer[kgo.Client]
	ctx     context.Context // canceled when the subscription must end
	out     chan *message.Message

	// rebalance is signaled (without blocking) when a group rebalance is
	// waiting for this subscription to finish its poll.
	rebalance chan struct{}

	// starts holds, without a group, the first offset to deliver per
	// partition (-1: no restriction), decided by InitialOffsets when the
	// partition is first seen. Only touched by the run goroutine.
	starts map[int32]int64
}

// outcome of delivering one record.
type outcome int

const (
	delivered outcome = iota // acked (and committed) or skipped: go on
	stopped                  // the subscription is ending
	lost                     // group membership was lost: start over with a new client
	yielded                  // not in flight and a rebalance is waiting: rewind, poll again
)

func (s *subscription) grouped() bool { return s.cfg.ConsumerGroup != "" }

func (s *subscription) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumeTopics(s.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.WithLogger(kgoLogger{logger: s.logger, gate: &s.repeats}),
		// franz-go v1.22.2 reads a fetch session's id in Client.Close while
		// its fetch loop may still write it (a data race the race detector
		// reports); without fetch sessions the id is never written. They
		// only save bandwidth with many partitions.
		kgo.DisableFetchSessions(),
	}
	if s.grouped() {
		commit := kgo.DisableAutoCommit()
		if s.cfg.CommitInterval > 0 {
			commit = kgo.AutoCommitMarks()
			opts = append(opts, kgo.AutoCommitInterval(s.cfg.CommitInterval))
		}
		opts = append(opts,
			kgo.ConsumerGroup(s.cfg.ConsumerGroup),
			kgo.BlockRebalanceOnPoll(),
			commit,
			kgo.OnPartitionsAssigned(s.logPartitions("Partitions assigned")),
			kgo.OnPartitionsRevoked(s.logPartitions("Partitions revoked")),
			kgo.OnPartitionsLost(s.logPartitions("Partitions lost")),
			kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) {
				select {
				case s.rebalance <- struct{}{}:
				default:
				}
			}),
		)
		if s.cfg.InitialOffsets != nil {
			opts = append(opts, kgo.AdjustFetchOffsetsFn(s.adjustOffsets))
		}
	}
	return append(opts, s.cfg.ExtraOpts...)
}

// newClient makes s.client a new client of clientOpts, with a context of
// its own (last: ExtraOpts do not replace it) that closeClient can cancel.
func (s *subscription) newClient() error {
	ctx, cancel := context.WithCancel(context.Background())
	client, err := kgo.NewClient(kafkaconn.With(append(s.clientOpts(), kgo.WithContext(ctx))...)...)
	if err != nil {
		cancel()
		return err
	}
	s.client, s.cancelClient = client, cancel
	s.current.Store(client)
	return nil
}

// closeClient closes s.client; a group member's leave is bounded by
// LeaveTimeout (CloseMember), and a cut leave is logged.
func (s *subscription) closeClient() {
	if !s.grouped() {
		s.client.Close()
		s.cancelClient()
		return
	}
	closed, err := CloseMember(s.client, s.cancelClient, s.cfg.ConsumerGroup, s.cfg.LeaveTimeout, s.cfg.Brokers, s.cfg.ExtraOpts...)
	if err != nil {
		s.logger.Error("Leaving the consumer group", err, nil)
	}
	// ExtraOpts may bring partition callbacks that hold resources (an
	// exactly-once worker's transactional producers, taken over at
	// assignment): one still running after a cut must end before the
	// subscription does, so its owner's cleanup comes after it (a
	// review's finding); the pipeline's CloseWait bounds this wait
	<-closed
}

func (s *subscription) logPartitions(msg string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		s.logger.Debug(msg, watermill.LogFields{"partitions": parts})
	}
}

// adjustOffsets applies InitialOffsets to the offsets a group member is about
// to start its newly assigned partitions at. A partition InitialOffsets
// declines starts at the start of the log, never at the group's committed
// offset: the application keeps its own positions, so it has applied
// nothing of that partition, and the committed offset may be another
// member's (another instance's store), which would skip every record below
// it (issue 15).
func (s *subscription) adjustOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for topic, partitions := range offsets {
		for partition := range partitions {
			next, ok := s.cfg.InitialOffsets(topic, partition)
			if !ok {
				partitions[partition] = kgo.NewOffset().AtStart()
				s.logger.Debug("Starting partition at the start of the log", watermill.LogFields{"partition": partition})
				continue
			}
			partitions[partition] = kgo.NewOffset().At(next).WithEpoch(-1)
			s.logger.Debug("Starting partition at initial offset", watermill.LogFields{"partition": partition, "offset": next})
		}
	}
	return offsets, nil
}

// run consumes until the subscription ends, then closes the output channel.
// A group member that finds out (through a failed commit) that it was
// removed from the group starts over with a new client, so that nothing it
// had buffered for its former partitions is ever delivered.
func (s *subscription) run() {
	defer close(s.out)
	for s.consume() == lost {
		s.logger.Info("Lost group membership, rejoining with a new client", nil)
		if err := s.newClient(); err != nil {
			s.logger.Error("Cannot recreate the consumer client, ending the subscription", err, nil)
			return
		}
	}
}

// consume polls and delivers with s.client, which it closes on return
// (closeClient), until the subscription ends (stopped) or the group
// membership is lost (lost).
func (s *subscription) consume() outcome {
	defer s.closeClient()
	for {
		// A signal left from before this poll concerns a rebalance that
		// AllowRebalance already let through.
		select {
		case <-s.rebalance:
		default:
		}
		fetches := s.client.PollRecords(s.ctx, maxPollRecords)
		if s.ctx.Err() != nil || fetches.IsClientClosed() {
			s.client.AllowRebalance()
			return stopped
		}
		o := s.process(fetches)
		s.client.AllowRebalance()
		if o == stopped || o == lost {
			return o
		}
	}
}

// process delivers every record of one poll, partition by partition, and
// returns stopped, lost, or delivered to go on with the next poll.
func (s *subscription) process(fetches kgo.Fetches) outcome {
	var parts [][]*kgo.Record
	var errs int
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil {
			errs++
			if ok, held := s.repeats.allow(repeatKey("Fetch failed", p.Err)); ok {
				f := watermill.LogFields{"partition": p.Partition}
				if held > 0 {
					f["repeated"] = held
				}
				s.logger.Error("Fetch failed", p.Err, f)
			}
		}
		if recs := s.fromStart(p.Partition, p.Records); len(recs) > 0 {
			parts = append(parts, recs)
		}
	})
	for i, recs := range parts {
		for j, rec := range recs {
			if rec.Attrs.IsControl() {
				// a transaction marker (kgo.KeepControlRecords): nothing to
				// deliver; committing past it keeps the group's lag at 0 on
				// a partition that ends with one
				if o := s.commit(rec); o == stopped || o == lost {
					return o
				}
				continue
			}
			switch o := s.deliver(rec); o {
			case stopped, lost:
				return o
			case yielded:
				s.rewind(append([][]*kgo.Record{recs[j:]}, parts[i+1:]...))
				return delivered
			}
		}
	}
	if errs > 0 && len(parts) == 0 && !s.sleep(pollErrorBackoff) {
		return stopped
	}
	return delivered
}

// rewind moves the partitions of undelivered records back to the first of
// them, so that they are fetched again if the partitions stay assigned
// after the rebalance this subscription yields to (revoked partitions
// continue at the committed offset, which is the same).
func (s *subscription) rewind(undelivered [][]*kgo.Record) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	for _, recs := range undelivered {
		if len(recs) == 0 {
			continue
		}
		first := recs[0]
		if offsets[first.Topic] == nil {
			offsets[first.Topic] = make(map[int32]kgo.EpochOffset)
		}
		if _, seen := offsets[first.Topic][first.Partition]; !seen { // keep the earliest
			offsets[first.Topic][first.Partition] = kgo.EpochOffset{Epoch: first.LeaderEpoch, Offset: first.Offset}
		}
	}
	s.logger.Debug("Yielding to rebalance", watermill.LogFields{"rewind": offsets})
	s.client.SetOffsets(offsets)
}

// fromStart applies InitialOffsets for a subscription without a group: the
// first time a partition is seen, it asks where to start and drops the
// records before that offset (seeking past them if none of this poll is
// wanted). Group members get their start offsets from adjustOffsets.
func (s *subscription) fromStart(partition int32, recs []*kgo.Record) []*kgo.Record {
	if s.grouped() || s.cfg.InitialOffsets == nil || len(recs) == 0 {
		return recs
	}
	start, seen := s.starts[partition]
	if !seen {
		start = -1
		if next, ok := s.cfg.InitialOffsets(s.topic, partition); ok {
			start = next
			s.logger.Debug("Starting partition at initial offset", watermill.LogFields{"partition": partition, "offset": next})
			if recs[len(recs)-1].Offset < next {
				s.client.SetOffsets(map[string]map[int32]kgo.EpochOffset{
					s.topic: {partition: {Epoch: -1, Offset: next}},
				})
			}
		}
		s.starts[partition] = start
	}
	if start < 0 {
		return recs
	}
	for i, rec := range recs {
		if rec.Offset >= start {
			return recs[i:]
		}
	}
	return nil
}

// deliver sends rec until it is Acked, then commits it (with a group). While
// rec is not in flight (before it is sent, and between a Nack and its
// redelivery), it gives way to a group rebalance that is waiting.
func (s *subscription) deliver(rec *kgo.Record) outcome {
	if s.cfg.Skip != nil && s.cfg.Skip(rec) {
		return s.commit(rec)
	}
	for {
		msg, err := s.cfg.Unmarshaler.Unmarshal(rec)
		if err != nil {
			s.logger.Error("Skipping record that cannot be unmarshaled", err, recordFields(rec))
			return s.commit(rec)
		}
		setRecordMetadata(msg, rec)

		msgCtx, cancelMsg := context.WithCancel(s.ctx)
		msg.SetContext(msgCtx)
		select {
		case s.out <- msg:
		case <-s.rebalance:
			cancelMsg()
			return yielded
		case <-s.ctx.Done():
			cancelMsg()
			return stopped
		}

		select {
		case <-msg.Acked():
			cancelMsg()
			return s.commit(rec)
		case <-msg.Nacked():
			cancelMsg()
			s.logger.Trace("Message nacked, resending", recordFields(rec))
			if o := s.nackSleep(); o != delivered {
				return o
			}
		case <-s.ctx.Done():
			cancelMsg()
			select {
			case <-msg.Acked(): // raced with the end of the subscription
				s.commit(rec)
			default:
			}
			return stopped
		}
	}
}

// commit commits the offset after rec to the group, if any. The commit is
// synchronous, bounded by commitTimeout, and outlives the end of the
// subscription by at most LeaveTimeout: franz-go holds a commit while the
// member joins and syncs, which behind members stopping together lasted
// until the rebalance timeout, so a stop waited the whole commitTimeout
// before the leave (found by TestSlowStop: a marker's commit).
func (s *subscription) commit(rec *kgo.Record) outcome {
	if !s.grouped() {
		return delivered
	}
	if s.cfg.CommitInterval > 0 {
		s.client.MarkCommitRecords(rec)
		return delivered
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), commitTimeout)
	defer cancel()
	defer context.AfterFunc(s.ctx, func() { time.AfterFunc(s.cfg.LeaveTimeout, cancel) })()
	err := s.client.CommitRecords(ctx, rec)
	if err == nil {
		return delivered
	}
	s.logger.Error("Offset commit failed", err, recordFields(rec))
	if membershipLost(err) {
		return lost
	}
	return delivered
}

// membershipLost reports whether a commit failed because this member is no
// longer part of the group generation that owns its partitions.
func membershipLost(err error) bool {
	return errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.UnknownMemberID) ||
		errors.Is(err, kerr.FencedInstanceID) ||
		errors.Is(err, kerr.StaleMemberEpoch)
}

// nackSleep waits NackResendSleep before a redelivery; it returns delivered
// when the redelivery should go ahead.
func (s *subscription) nackSleep() outcome {
	if s.cfg.NackResendSleep <= 0 {
		return delivered
	}
	t := time.NewTimer(s.cfg.NackResendSleep)
	defer t.Stop()
	select {
	case <-t.C:
		return delivered
	case <-s.rebalance:
		return yielded
	case <-s.ctx.Done():
		return stopped
	}
}

// sleep waits d (nothing for d ≤ 0) and reports whether the subscription is
// still running.
func (s *subscription) sleep(d time.Duration) bool {
	if d <= 0 {
		return s.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func recordFields(rec *kgo.Record) watermill.LogFields {
	return watermill.LogFields{"partition": rec.Partition, "offset": rec.Offset}
}
