// Package kafkapubsub implements Watermill's message.Publisher and
// message.Subscriber on top of franz-go (kgo).
//
// # Publishing
//
// Publisher.Publish marshals every message into a kgo.Record (see
// Marshaler), produces all of them with an idempotent, acks=all producer and
// returns only once the broker acknowledged every record. Records that fail
// with a retriable error are produced again with exponential backoff. The
// record key is taken from the metadata entry MetadataKey ("partition_key")
// when the Marshaler did not set one, so messages sharing a key share a
// partition and keep their relative order.
//
// # Subscribing
//
// Every Subscriber.Subscribe call creates its own franz-go client. With
// SubscriberConfig.ConsumerGroup set, the client is a group member whose
// offsets are committed synchronously on every Ack; without it, the client
// reads every partition of the topic from the start of the log.
//
// Delivery is strictly sequential per subscription: a message is sent on the
// output channel only after the previous one was Acked (which implies that
// messages of one partition arrive in log order). A Nacked message is sent
// again, as a fresh copy, after SubscriberConfig.NackResendSleep.
//
// Group members block rebalances while they process a poll
// (kgo.BlockRebalanceOnPoll), so a partition is never revoked while one of
// its messages is in flight (sent and not yet Acked or Nacked), and records
// of revoked partitions are never delivered. A member whose next message is
// not taken from the channel, or who waits to resend a Nacked one, does not
// hold a waiting rebalance up: it rewinds its undelivered records and lets
// the rebalance through. A message held longer than the group's rebalance
// timeout (kgo.RebalanceTimeout, 60s by default) while a rebalance waits gets
// the member removed from the group; its partitions move to other members,
// from the committed offset, so that message is delivered again there. The
// removed member notices when committing the message, drops everything it
// had polled and rejoins with a new client.
//
// SubscriberConfig.InitialOffsets lets the application keep its own
// checkpoints: when it reports an offset for a partition, consumption of that
// partition starts there, overriding the group's committed offset; a
// partition it has no checkpoint for starts at the start of the log (the
// committed offset may be another member's).
//
// Every delivered message carries the metadata entries TopicMetadataKey,
// PartitionMetadataKey, OffsetMetadataKey, RecordKeyMetadataKey and
// TimestampMetadataKey, plus whatever the Unmarshaler derives from the record
// (DefaultMarshaler: all record headers).
package kafkapubsub
