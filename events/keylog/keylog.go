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
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// Place is where the records of a key are: its partition of a topic, that
// partition's end offset when read, and the topic's id in the log read
// (32 hex digits; "" when the broker gave none), which names
// the log: a topic deleted and made again, or another cluster's, has
// another id.
type Place struct {
	Part    int32
	End     int64
	TopicID string
}

// Partition returns the partition of topic that holds key (franz-go's
// StickyKeyPartitioner, which hashes a key as Kafka's default partitioner
// does: murmur2 modulo the partition count) and that partition's end
// offset (0 for an empty one), read with cl. Errors: the topic's metadata
// or end offsets could not be read, or the topic does not exist.
func Partition(ctx context.Context, cl *kgo.Client, topic, key string) (part int32, end int64, err error) {
	pl, err := Locate(ctx, cl, topic, key)
	return pl.Part, pl.End, err
}

// Locate is Partition that also returns the topic's id (Place).
func Locate(ctx context.Context, cl *kgo.Client, topic, key string) (Place, error) {
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return Place{}, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	n := len(td[topic].Partitions)
	if n == 0 {
		return Place{}, fmt.Errorf("topic %s not found", topic)
	}
	pl := Place{Part: int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, n))}
	if id := td[topic].ID; id != (kadm.TopicID{}) {
		pl.TopicID = fmt.Sprintf("%x", [16]byte(id))
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return Place{}, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	o, ok := ends.Lookup(topic, pl.Part)
	if !ok || o.Err != nil {
		return Place{}, fmt.Errorf("end offset of %s/%d: %v", topic, pl.Part, o.Err)
	}
	pl.End = o.Offset
	return pl, nil
}

// Scan calls fn, in log order, for each record with key among the records
// of partition part of topic from offset 0 up to end (exclusive; end as
// Partition returns it, > 0). Only committed records are read (a fenced
// relay writes in transactions: never an aborted one), and the
// transaction markers count towards end, so the scan ends at end. It
// returns ctx's error, wrapped, when ctx ends first; fn's records are then
// a prefix of the key's.
func Scan(ctx context.Context, brokers []string, topic string, part int32, end int64, key string, fn func(*kgo.Record)) error {
	return scanFrom(ctx, brokers, topic, part, 0, end, key, fn)
}

// scanFrom is Scan from offset from (< end) instead of 0.
func scanFrom(ctx context.Context, brokers []string, topic string, part int32, from, end int64, key string, fn func(*kgo.Record)) error {
	scans.Add(1)
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(from)}}),
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
			scanned.Add(1)
			if string(rec.Key) == key {
				fn(rec)
			}
			if rec.Offset+1 >= end {
				return nil
			}
		}
	}
}

// scans and scanned count the partition reads made in this process and
// the records they fetched (Counts).
var scans, scanned atomic.Int64

// Counts returns how many partition reads Scan and ScanCached made in this
// process and how many records (the key's and the others) they fetched: a
// test checks that a cached read fetched only what was new.
func Counts() (reads, records int64) { return scans.Load(), scanned.Load() }
