package projections

import (
	"encoding/binary"
	"fmt"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/cockroachdb/pebble/v2"
)

// OutboxRecord is a derived event waiting in the outbox: the Kafka record
// the relay will produce.
type OutboxRecord struct {
	Topic string      `json:"topic"`
	Key   string      `json:"key"`
	Type  events.Type `json:"type"`
	Value []byte      `json:"value"`
	// Headers, when set, are the record's headers (a dead-letter record
	// keeps the original's and adds the reason); nil means the derived
	// event's content-type header.
	Headers []Header `json:"headers,omitempty"`
	// Source is the consumed record whose application wrote this row (set
	// by ApplyBatch; nil for rows written by Apply). A fenced relay
	// (processors.Fence) relays a row only while this instance owns the
	// source's partition, transactionally with the partition's relayed
	// frontier, and drops a row whose source is below the frontier another
	// owner committed.
	Source *Position `json:"source,omitempty"`
}

// Header is one Kafka record header of an OutboxRecord.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Rebuilding tells the store that a replay is rebuilding it from the log
// (processors.Replay calls it): from now on its commits drop the outbox
// rows, the derived events and dead-letter records that the log already
// holds, so nothing would ever relay them (a replay does not), and a store
// served after a replay would relay them a second time. The projections
// are unchanged: the outbox is outside them and the digest, and Tx.Emit
// still derives and validates every event and checks its topic and key, so
// an Apply call fails exactly as it did live. It saves a replay the
// encoding (in Emit, and of the outbox rows) and the Pebble writes of
// those rows (BenchmarkEngine: about a quarter of a replay's records are
// derived events).
func (s *Store) Rebuilding() { s.rebuild.Store(true) }

// OutboxEntry is an OutboxRecord with its outbox sequence number.
type OutboxEntry struct {
	Seq uint64
	OutboxRecord
}

func outboxKey(seq uint64) []byte {
	k := make([]byte, len(prefixOutbox)+8)
	copy(k, prefixOutbox)
	binary.BigEndian.PutUint64(k[len(prefixOutbox):], seq)
	return k
}

// PendingOutbox returns up to max outbox entries in sequence order.
func (s *Store) PendingOutbox(max int) ([]OutboxEntry, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixOutbox), UpperBound: upper(prefixOutbox)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []OutboxEntry
	for it.First(); it.Valid() && len(out) < max; it.Next() {
		seq := binary.BigEndian.Uint64(it.Key()[len(prefixOutbox):])
		s.mu.Lock()
		r, cached := s.outbox[seq]
		s.mu.Unlock()
		if !cached {
			val, err := rowValue(it)
			if err != nil {
				return nil, err
			}
			if err := gojson.Unmarshal(val, &r); err != nil { // encoding/json's semantics, faster
				return nil, fmt.Errorf("projections: outbox entry %x: %w", it.Key(), err)
			}
		}
		out = append(out, OutboxEntry{Seq: seq, OutboxRecord: r})
	}
	return out, it.Error()
}

// outboxCacheBytes bounds the outbox rows a Store keeps decoded in memory
// for the relay (Store.outbox), counted by cachedSize: 16 MiB. The relay
// acknowledges rows within moments of their commit, so the cache holds a
// few hundred rows; only a relay that cannot write (a broker or a derived
// topic unwritable while the processors go on consuming) lets rows pile
// up. Rows committed while the cache is full stay in Pebble only and are
// decoded when relayed, as an earlier process's rows are: the same
// records (TestOutboxConcurrentAndReopen), a little more CPU. Before the
// bound every unacknowledged row stayed in memory: 40 MB after 200,000
// tau-bench events with no relay (BenchmarkPerEventCost's heap), and
// without limit during a long relay outage.
const outboxCacheBytes = 16 << 20

// cachedSize is what r costs in Store.outbox: its bytes and about 128 for
// the map entry, the record's fields and its source position.
func cachedSize(r *OutboxRecord) int {
	n := 128 + len(r.Topic) + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 32 + len(h.Key) + len(h.Value)
	}
	return n
}

// cacheOutbox remembers the committed outbox rows recs, numbered from
// first (see Store.outbox), while they fit in outboxCacheBytes.
func (s *Store) cacheOutbox(first uint64, recs []OutboxRecord) {
	if len(recs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outbox == nil {
		s.outbox = map[uint64]OutboxRecord{}
	}
	for i := range recs {
		n := cachedSize(&recs[i])
		if s.outboxBytes+n > outboxCacheBytes {
			continue // decoded from Pebble when relayed
		}
		s.outbox[first+uint64(i)] = recs[i]
		s.outboxBytes += n
	}
}

// AckOutbox removes relayed entries.
func (s *Store) AckOutbox(entries []OutboxEntry) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, e := range entries {
		if err := b.Delete(outboxKey(e.Seq), nil); err != nil {
			return err
		}
	}
	if err := s.write(func() error { return b.Commit(s.writeOpts()) }); err != nil {
		return err
	}
	s.outboxLen.Add(-int64(len(entries)))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		if r, ok := s.outbox[e.Seq]; ok {
			s.outboxBytes -= cachedSize(&r)
			delete(s.outbox, e.Seq)
		}
	}
	return nil
}

// OutboxLen is the number of rows in the outbox: derived events and dead
// letters committed and not yet relayed, and, on a member of a fenced
// cluster, its copies of the global tables' derived events waiting until
// the task's owner has relayed past them (processors.Fence prunes them).
// Counted at Open and kept by the commits and AckOutbox; no read.
func (s *Store) OutboxLen() int64 { return s.outboxLen.Load() }

// OutboxNotify receives a value whenever Apply queued derived events.
func (s *Store) OutboxNotify() <-chan struct{} { return s.notify }
