package kafkapubsub

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// subscription is the consume loop of one Subscribe call.
type subscription struct {
	topic  string
	cfg    *SubscriberConfig
	logger watermill.LoggerAdapter
	client *kgo.Client
	ctx    context.Context // canceled when the subscription must end
	out    chan *message.Message

	// starts holds, without a group, the first offset to deliver per
	// partition (-1: no restriction), decided by InitialOffsets when the
	// partition is first seen. Only touched by the run goroutine.
	starts map[int32]int64
}

// outcome of delivering one record.
type outcome int

const (
	delivered outcome = iota // acked (and committed) or skipped
	stopped                  // the subscription is ending
	lost                     // group membership was lost: drop the poll
)

func (s *subscription) grouped() bool { return s.cfg.ConsumerGroup != "" }

func (s *subscription) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumeTopics(s.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.WithLogger(kgoLogger{logger: s.logger}),
	}
	if s.grouped() {
		opts = append(opts,
			kgo.ConsumerGroup(s.cfg.ConsumerGroup),
			kgo.BlockRebalanceOnPoll(),
			kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(s.logPartitions("Partitions assigned")),
			kgo.OnPartitionsRevoked(s.logPartitions("Partitions revoked")),
			kgo.OnPartitionsLost(s.logPartitions("Partitions lost")),
		)
		if s.cfg.InitialOffsets != nil {
			opts = append(opts, kgo.AdjustFetchOffsetsFn(s.adjustOffsets))
		}
	}
	return append(opts, s.cfg.ExtraOpts...)
}

func (s *subscription) logPartitions(msg string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		s.logger.Debug(msg, watermill.LogFields{"partitions": parts})
	}
}

// adjustOffsets applies InitialOffsets to the offsets a group member is about
// to start its newly assigned partitions at.
func (s *subscription) adjustOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for topic, partitions := range offsets {
		for partition := range partitions {
			if next, ok := s.cfg.InitialOffsets(topic, partition); ok {
				partitions[partition] = kgo.NewOffset().At(next).WithEpoch(-1)
				s.logger.Debug("Starting partition at initial offset", watermill.LogFields{"partition": partition, "offset": next})
			}
		}
	}
	return offsets, nil
}

func (s *subscription) run() {
	defer close(s.out)
	defer s.client.Close()
	for {
		fetches := s.client.PollRecords(s.ctx, maxPollRecords)
		if s.ctx.Err() != nil || fetches.IsClientClosed() {
			s.client.AllowRebalance()
			return
		}
		ok := s.process(fetches)
		s.client.AllowRebalance()
		if !ok {
			return
		}
	}
}

// process delivers every record of one poll, partition by partition. It
// returns false when the subscription is ending.
func (s *subscription) process(fetches kgo.Fetches) bool {
	var errs int
	for _, fetch := range fetches {
		for _, topic := range fetch.Topics {
			for _, part := range topic.Partitions {
				if part.Err != nil {
					errs++
					s.logger.Error("Fetch failed", part.Err, watermill.LogFields{"partition": part.Partition})
				}
				for _, rec := range s.fromStart(part.Partition, part.Records) {
					switch s.deliver(rec) {
					case stopped:
						return false
					case lost:
						// Everything left in this poll belongs to a
						// generation we are no longer part of; the
						// client re-fetches committed offsets on rejoin.
						return true
					}
				}
			}
		}
	}
	if errs > 0 && fetches.NumRecords() == 0 {
		return s.sleep(pollErrorBackoff)
	}
	return true
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

// deliver sends rec until it is Acked, then commits it (with a group).
func (s *subscription) deliver(rec *kgo.Record) outcome {
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
			if !s.sleep(s.cfg.NackResendSleep) {
				return stopped
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
// synchronous and not interrupted by the end of the subscription.
func (s *subscription) commit(rec *kgo.Record) outcome {
	if !s.grouped() {
		return delivered
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), commitTimeout)
	defer cancel()
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
