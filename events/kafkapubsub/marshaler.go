package kafkapubsub

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MetadataKey is the message metadata entry whose value becomes the record
// key when publishing (unless the Marshaler already set a key). Messages
// without it, or with an empty value, are produced with a nil key.
const MetadataKey = "partition_key"

// UUIDHeaderKey is the record header in which DefaultMarshaler stores the
// Watermill message UUID. It is reserved: a message may not carry metadata
// under this name.
const UUIDHeaderKey = "_watermill_message_uuid"

// Metadata entries set on every message delivered by a Subscriber.
const (
	// TopicMetadataKey holds the record's topic.
	TopicMetadataKey = "kafka_topic"
	// PartitionMetadataKey holds the record's partition (decimal).
	PartitionMetadataKey = "kafka_partition"
	// OffsetMetadataKey holds the record's offset (decimal).
	OffsetMetadataKey = "kafka_offset"
	// RecordKeyMetadataKey holds the record's key (empty for a nil key).
	RecordKeyMetadataKey = "kafka_key"
	// TimestampMetadataKey holds the record's timestamp, RFC 3339 with
	// nanoseconds (time.RFC3339Nano), in UTC.
	TimestampMetadataKey = "kafka_timestamp"
)

// ErrReservedMetadata is returned (wrapped) by DefaultMarshaler.Marshal for
// a message whose metadata uses UUIDHeaderKey.
var ErrReservedMetadata = errors.New("kafkapubsub: reserved metadata key")

// Marshaler converts a Watermill message into a Kafka record for topic.
// The Publisher always sets the returned record's Topic to topic and, when
// the record has no Key, derives it from the MetadataKey metadata entry.
type Marshaler interface {
	Marshal(topic string, msg *message.Message) (*kgo.Record, error)
}

// Unmarshaler converts a consumed Kafka record into a Watermill message.
// The Subscriber sets the kafka_* metadata entries (TopicMetadataKey, ...)
// on the returned message itself, so implementations need not.
type Unmarshaler interface {
	Unmarshal(rec *kgo.Record) (*message.Message, error)
}

// DefaultMarshaler is the default Marshaler and Unmarshaler. It stores the
// message UUID in the UUIDHeaderKey header, every metadata entry as a header
// (sorted by name) and the payload as the record value. Unmarshal reverses
// that and adds the kafka_* metadata entries.
type DefaultMarshaler struct{}

// Marshal implements Marshaler. It fails, wrapping ErrReservedMetadata, if
// msg has metadata named UUIDHeaderKey.
func (DefaultMarshaler) Marshal(topic string, msg *message.Message) (*kgo.Record, error) {
	if _, reserved := msg.Metadata[UUIDHeaderKey]; reserved {
		return nil, fmt.Errorf("%w: metadata %q of message %s", ErrReservedMetadata, UUIDHeaderKey, msg.UUID)
	}
	keys := make([]string, 0, len(msg.Metadata))
	for k := range msg.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	headers := make([]kgo.RecordHeader, 0, len(keys)+1)
	headers = append(headers, kgo.RecordHeader{Key: UUIDHeaderKey, Value: []byte(msg.UUID)})
	for _, k := range keys {
		headers = append(headers, kgo.RecordHeader{Key: k, Value: []byte(msg.Metadata[k])})
	}
	return &kgo.Record{Topic: topic, Value: msg.Payload, Headers: headers}, nil
}

// Unmarshal implements Unmarshaler. It never fails; a record without the
// UUIDHeaderKey header yields a message with an empty UUID.
func (DefaultMarshaler) Unmarshal(rec *kgo.Record) (*message.Message, error) {
	var uuid string
	md := make(message.Metadata, len(rec.Headers)+5)
	for _, h := range rec.Headers {
		if h.Key == UUIDHeaderKey {
			uuid = string(h.Value)
			continue
		}
		md[h.Key] = string(h.Value)
	}
	msg := message.NewMessage(uuid, rec.Value)
	msg.Metadata = md
	setRecordMetadata(msg, rec)
	return msg, nil
}

// setRecordMetadata sets the kafka_* metadata entries describing rec.
func setRecordMetadata(msg *message.Message, rec *kgo.Record) {
	if msg.Metadata == nil {
		msg.Metadata = make(message.Metadata, 5)
	}
	msg.Metadata[TopicMetadataKey] = rec.Topic
	msg.Metadata[PartitionMetadataKey] = strconv.FormatInt(int64(rec.Partition), 10)
	msg.Metadata[OffsetMetadataKey] = strconv.FormatInt(rec.Offset, 10)
	msg.Metadata[RecordKeyMetadataKey] = string(rec.Key)
	msg.Metadata[TimestampMetadataKey] = rec.Timestamp.UTC().Format(time.RFC3339Nano)
}
