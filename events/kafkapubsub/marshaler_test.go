package kafkapubsub_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

func TestDefaultMarshalerRoundTrip(t *testing.T) {
	var m kafkapubsub.DefaultMarshaler
	msg := message.NewMessage("uuid-1", []byte("payload"))
	msg.Metadata.Set("b", "2")
	msg.Metadata.Set("a", "1")

	rec, err := m.Marshal("topic", msg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != "topic" || string(rec.Value) != "payload" || rec.Key != nil {
		t.Fatalf("record topic %q value %q key %q", rec.Topic, rec.Value, rec.Key)
	}
	wantHeaders := []kgo.RecordHeader{
		{Key: kafkapubsub.UUIDHeaderKey, Value: []byte("uuid-1")},
		{Key: "a", Value: []byte("1")},
		{Key: "b", Value: []byte("2")},
	}
	if len(rec.Headers) != len(wantHeaders) {
		t.Fatalf("headers %v, want %v", rec.Headers, wantHeaders)
	}
	for i, h := range rec.Headers {
		if h.Key != wantHeaders[i].Key || string(h.Value) != string(wantHeaders[i].Value) {
			t.Fatalf("header %d = %s:%s, want %s:%s", i, h.Key, h.Value, wantHeaders[i].Key, wantHeaders[i].Value)
		}
	}

	// As consumed from partition 3 at offset 42.
	rec.Partition, rec.Offset, rec.Key = 3, 42, []byte("k")
	rec.Timestamp = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	got, err := m.Unmarshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got.UUID != "uuid-1" || string(got.Payload) != "payload" {
		t.Fatalf("unmarshaled %s %q", got.UUID, got.Payload)
	}
	want := map[string]string{
		"a":                              "1",
		"b":                              "2",
		kafkapubsub.TopicMetadataKey:     "topic",
		kafkapubsub.PartitionMetadataKey: "3",
		kafkapubsub.OffsetMetadataKey:    "42",
		kafkapubsub.RecordKeyMetadataKey: "k",
		kafkapubsub.TimestampMetadataKey: "2024-05-06T06:08:09.123456789Z",
	}
	if len(got.Metadata) != len(want) {
		t.Errorf("metadata %v, want %v", got.Metadata, want)
	}
	for k, v := range want {
		if got.Metadata.Get(k) != v {
			t.Errorf("metadata %s = %q, want %q", k, got.Metadata.Get(k), v)
		}
	}
}

func TestDefaultMarshalerReservedMetadata(t *testing.T) {
	msg := message.NewMessage("uuid-1", nil)
	msg.Metadata.Set(kafkapubsub.UUIDHeaderKey, "x")
	if _, err := (kafkapubsub.DefaultMarshaler{}).Marshal("t", msg); !errors.Is(err, kafkapubsub.ErrReservedMetadata) {
		t.Fatalf("error %v, want ErrReservedMetadata", err)
	}
}
