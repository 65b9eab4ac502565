// Package keylog reads the records of one record key back from the Kafka
// log: the partition Kafka's default partitioner gives the key, scanned
// from offset 0 to its end. A projection keeps the state; where an answer
// needs the events themselves (a workflow's history, a coordination
// pattern's counting steps) and no index row holds their positions, this
// is the read, and its cost is the whole partition's, whatever the key's
// share of it.
package keylog

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// Partition returns the partition of topic that holds key (franz-go's
// StickyKeyPartitioner, which hashes a key as Kafka's default partitioner
// does: murmur2 modulo the partition count) and that partition's end
// offset (0 for an empty one), read with cl. Errors: the topic's metadata
// or end offsets could not be read, or the topic does not exist.
func Partition(ctx context.Context, cl *kgo.Client, topic, key string) (part int32, end int64, err error) {
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	n := len(td[topic].Partitions)
	if n == 0 {
		return 0, 0, fmt.Errorf("topic %s not found", topic)
	}
	part = int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, n))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	o, ok := ends.Lookup(topic, part)
	if !ok || o.Err != nil {
		return 0, 0, fmt.Errorf("end offset of %s/%d: %v", topic, part, o.Err)
	}
	return part, o.Offset, nil
}

// Scan calls fn, in log order, for each record with key among the records
// of partition part of topic from offset 0 up to end (exclusive; end as
// Partition returns it, > 0). Only committed records are read (a fenced
// relay writes in transactions: never an aborted one), and the
// transaction markers count towards end, so the scan ends at end. It
// returns ctx's error, wrapped, when ctx ends first; fn's records are then
// a prefix of the key's.
func Scan(ctx context.Context, brokers []string, topic string, part int32, end int64, key string, fn func(*kgo.Record)) error {
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read %s/%d: %w", topic, part, ctx.Err())
		}
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			if string(rec.Key) == key {
				fn(rec)
			}
			if rec.Offset+1 >= end {
				return nil
			}
		}
	}
}
