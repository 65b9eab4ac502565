package processors

import (
	"context"
	"errors"
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/projections"
)

type recordPositionKey struct{}

// WithRecordPosition returns ctx carrying pos, the log position of the
// record a Worker's Handle is given (the Runner sets it).
func WithRecordPosition(ctx context.Context, pos projections.Position) context.Context {
	return context.WithValue(ctx, recordPositionKey{}, pos)
}

// RecordPosition is the log position (topic, partition, offset) of the
// record being handled, when ctx is a Worker's Handle context from the
// Runner; false otherwise. A worker that waits for its topic's processor
// to apply the record tells with it a record the processor rejected (its
// offset passed, nothing applied) from one not reached yet, instead of
// waiting out its timeout.
func RecordPosition(ctx context.Context) (projections.Position, bool) {
	pos, ok := ctx.Value(recordPositionKey{}).(projections.Position)
	return pos, ok
}

// messagePosition is msg's position on topic from the subscriber's
// metadata (kafkapubsub's partition and offset keys); the error names what
// did not parse. The Runner's gate, RecordPosition and the exactly-once
// worker path all read it here.
func messagePosition(msg *message.Message, topic string) (projections.Position, error) {
	p, err1 := strconv.ParseInt(msg.Metadata.Get(kafkapubsub.PartitionMetadataKey), 10, 32)
	o, err2 := strconv.ParseInt(msg.Metadata.Get(kafkapubsub.OffsetMetadataKey), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return projections.Position{}, err
	}
	return projections.Position{Topic: topic, Partition: int32(p), Offset: o}, nil
}
