package processors

import (
	"context"
	"fmt"
	"sync"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionCounts caches the partition count of the topics a consumer
// reads, for checkPartition. Chronicle creates its topics with a fixed
// count; adding partitions to a topic moves keys (Kafka's own caveat),
// and records written before then sit where their key no longer hashes.
type partitionCounts struct {
	adm *kadm.Client
	mu  sync.Mutex
	n   map[string]int
}

func newPartitionCounts(cl *kgo.Client) *partitionCounts {
	return &partitionCounts{adm: kadm.NewClient(cl), n: map[string]int{}}
}

// of returns topic's partition count, from the cache or the broker's
// metadata (bounded by ctx). Errors: the metadata request's, or a topic
// the broker does not know.
func (c *partitionCounts) of(ctx context.Context, topic string) (int, error) {
	c.mu.Lock()
	n, ok := c.n[topic]
	c.mu.Unlock()
	if ok {
		return n, nil
	}
	td, err := c.adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("processors: partitions of %s: %w", topic, err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return 0, fmt.Errorf("processors: partitions of %s: %v", topic, d.Err)
	}
	c.mu.Lock()
	c.n[topic] = len(d.Partitions)
	c.mu.Unlock()
	return len(d.Partitions), nil
}

// checkPartition is nil when a record on partition of topic (n
// partitions), with record key recordKey, sits where its event's key
// belongs (events.Partition); else an *events.PartitionError. With one
// partition every record is where it belongs, whatever its key: a record
// keyed otherwise than events.Key is applied as if keyed right, as before
// the check, so a log written then replays as it did.
func checkPartition(topic string, partition int32, n int, key, recordKey string) error {
	if n <= 1 {
		return nil
	}
	if want := events.Partition(topic, key, n); want != partition {
		return &events.PartitionError{Topic: topic, Partition: partition, Want: want, Key: key, RecordKey: recordKey}
	}
	return nil
}
