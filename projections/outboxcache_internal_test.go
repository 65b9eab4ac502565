package projections

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// The rows a relay has not acknowledged are kept decoded in memory up to
// outboxCacheBytes, not all of them: with no relay (a broker or a derived
// topic unwritable while the processors go on), 40 MB after 200,000
// events in BenchmarkPerEventCost, and no limit. The rows past the bound
// are decoded from Pebble when relayed, the same records.
func TestOutboxCacheIsBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	const size = 16 << 10
	total := 2*outboxCacheBytes/size + 100 // twice what the cache may hold
	value := func(i int) []byte {
		return append([]byte(fmt.Sprintf("%08d", i)), bytes.Repeat([]byte{'x'}, size-8)...)
	}
	for start := 0; start < total; start += 500 {
		items := make([]Item, 0, 500)
		for i := start; i < min(start+500, total); i++ {
			items = append(items, Item{Pos: Position{Topic: "t", Offset: int64(i)}, Err: errors.New("not an event"),
				DeadLetter: func(error) OutboxRecord {
					return OutboxRecord{Topic: "chronicle.deadletter", Key: "k", Value: value(i), Headers: []Header{{Key: "h", Value: []byte("v")}}}
				}})
		}
		if _, err := s.ApplyBatch("p", items, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	held, sized := 0, 0
	for _, r := range s.outbox {
		held += len(r.Value)
		sized += cachedSize(&r)
	}
	n, counted := len(s.outbox), s.outboxBytes
	s.mu.Unlock()
	if held > outboxCacheBytes || counted != sized || n == 0 {
		t.Fatalf("%d of %d rows held in memory, %d bytes of values (counted %d of %d), want at most %d bytes", n, total, held, counted, sized, outboxCacheBytes)
	}
	pending, err := s.PendingOutbox(total + 1)
	if err != nil || len(pending) != total || s.OutboxLen() != int64(total) {
		t.Fatalf("%d pending (OutboxLen %d), want %d: %v", len(pending), s.OutboxLen(), total, err)
	}
	for i, e := range pending {
		if !bytes.Equal(e.Value, value(i)) || e.Source == nil || e.Source.Offset != int64(i) || len(e.Headers) != 1 {
			t.Fatalf("pending row %d: %.20q from %v, want the dead letter of offset %d", i, e.Value, e.Source, i)
		}
	}
	// the rows held in memory are the rows decoded from Pebble
	s.Close()
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	decoded, err := s.PendingOutbox(total + 1)
	if err != nil || !reflect.DeepEqual(decoded, pending) {
		t.Fatalf("decoded after reopen: %d rows (%v), not the %d before", len(decoded), err, len(pending))
	}
	// rows cached since the reopen are counted out again by the ack
	extra := Item{Pos: Position{Topic: "t", Offset: int64(total)}, Err: errors.New("not an event"),
		DeadLetter: func(error) OutboxRecord {
			return OutboxRecord{Topic: "chronicle.deadletter", Key: "k", Value: value(total)}
		}}
	if _, err := s.ApplyBatch("p", []Item{extra}, nil); err != nil {
		t.Fatal(err)
	}
	all, err := s.PendingOutbox(total + 2)
	if err != nil || len(all) != total+1 {
		t.Fatalf("%d pending, want %d: %v", len(all), total+1, err)
	}
	if err := s.AckOutbox(all); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	n, counted = len(s.outbox), s.outboxBytes
	s.mu.Unlock()
	if n != 0 || counted != 0 || s.OutboxLen() != 0 {
		t.Fatalf("after acknowledging every row: %d held, %d bytes counted, OutboxLen %d", n, counted, s.OutboxLen())
	}
}
