package projections

import (
	"strconv"

	"github.com/cockroachdb/pebble/v2"
)

// prefixMeta holds facts about the store itself (which log it follows),
// outside the projections and the digest.
const prefixMeta = "m/meta/"

// Meta reads the store fact key; ok is false when it was never set.
func (s *Store) Meta(key string) (val []byte, ok bool, err error) {
	return getValue(s.db, []byte(prefixMeta+key))
}

// SetMeta writes the store fact key durably.
func (s *Store) SetMeta(key string, val []byte) error {
	return s.write(func() error { return s.db.Set([]byte(prefixMeta+key), val, pebble.Sync) })
}

// topicIDMeta is the Meta key under which a store records the topic id of
// topic in the log it follows.
func topicIDMeta(topic string) string { return "topic-id/" + topic }

// TopicID is the id of topic (kadm.TopicID's String form) in the log the
// store was built from, as SetTopicID recorded it; ok is false when none
// was. A running service records it at its first start, a replay for every
// topic it read, so a directory is refused when served with another log
// whose topics have other ids (pipeline's ErrForeignLog).
func (s *Store) TopicID(topic string) (id string, ok bool, err error) {
	v, ok, err := s.Meta(topicIDMeta(topic))
	return string(v), ok, err
}

// SetTopicID records id as topic's id in the log the store follows (see
// TopicID), durably.
func (s *Store) SetTopicID(topic, id string) error {
	return s.SetMeta(topicIDMeta(topic), []byte(id))
}

// topicPartitionsMeta is the Meta key under which a store records the
// partition count of topic in the log it follows.
func topicPartitionsMeta(topic string) string { return "topic-partitions/" + topic }

// TopicPartitions is topic's partition count in the log the store was
// built from, as SetTopicPartitions recorded it; ok is false when none was
// (a store from before counts were kept). A key's partition is its hash
// modulo the count, so a store built under one count does not follow a
// log whose count changed (pipeline's ErrPartitionsChanged).
func (s *Store) TopicPartitions(topic string) (n int, ok bool, err error) {
	v, ok, err := s.Meta(topicPartitionsMeta(topic))
	if err != nil || !ok {
		return 0, ok, err
	}
	n, err = strconv.Atoi(string(v))
	return n, err == nil, err
}

// SetTopicPartitions records n as topic's partition count in the log the
// store follows (see TopicPartitions), durably.
func (s *Store) SetTopicPartitions(topic string, n int) error {
	return s.SetMeta(topicPartitionsMeta(topic), []byte(strconv.Itoa(n)))
}
