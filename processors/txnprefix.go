package processors

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnPrefix cuts one partition's records at a replay's bound as a
// read-committed consumer saw them at that time. It reads the partition
// uncommitted, transaction markers included, and decides each
// transaction's records itself:
//   - Its prefix ends before the first record stamped after the time
//     bound (Kafka's rule for a time, as before).
//   - It also ends before the first record of a transaction decided after
//     the bound, committed or aborted: its records carry the time they
//     were produced, but a read-committed consumer (the live engine) saw
//     none of them, nor any record after them on the partition (the last
//     stable offset holds there), until the transaction ended. A
//     transaction's end is its marker's timestamp (the coordinator's
//     clock), which comes after its records, so records from the first
//     undecided transactional one on are held until the markers decide
//     them.
//   - A transaction aborted by the bound leaves out its records, as
//     reading committed does; one still undecided when the partition's
//     end is reached holds the prefix at its first record.
//
// Before, a transaction committed after the bound was in the as-of state
// while the live service had answered its session 404 (a Python
// integrator's walkthrough, 2026-12-01), and, reading committed, the
// replay never saw an aborted transaction's records, so one open at the
// bound and aborted after it did not cut (a re-test).
type txnPrefix struct {
	until time.Time // the time bound; zero: none (an offset-bounded partition)
	limit int64     // the prefix ends before this offset at the latest; -1: none
	held  []heldRecord
	cut   int64 // the prefix ends before this offset; -1: not known yet
	read  int64 // the offset after the last record read
}

type heldRecord struct {
	r       *kgo.Record
	decided bool // not transactional, or its transaction committed by until
}

// newTxnPrefix is the prefix of a partition bounded by the time until;
// limit, when not negative, bounds it by offset too (the partition of an
// --until position, whose prefix is bounded by its offset alone: until
// zero).
func newTxnPrefix(until time.Time, limit int64) *txnPrefix {
	return &txnPrefix{until: until, limit: limit, cut: -1}
}

// add takes the partition's next record (in offset order, transaction
// markers and aborted records included) and returns the records now known
// to be in the prefix, in order, and whether the prefix is complete:
// nothing read later can join it.
func (t *txnPrefix) add(r *kgo.Record) (out []*kgo.Record, complete bool) {
	t.read = r.Offset + 1
	late := func(ts time.Time) bool { return !t.until.IsZero() && ts.After(t.until) }
	switch {
	case r.Attrs.IsControl():
		t.decide(r.ProducerID, isAbortMarker(r), late(r.Timestamp))
	case t.past(r.Offset):
		// past the prefix: read on only for the markers held records wait for
	case late(r.Timestamp):
		t.cutAt(r.Offset)
	case len(t.held) == 0 && !r.Attrs.IsTransactional():
		out = append(out, r)
	default:
		t.held = append(t.held, heldRecord{r: r, decided: !r.Attrs.IsTransactional()})
	}
	for len(t.held) > 0 && t.held[0].decided && !t.past(t.held[0].r.Offset) {
		out = append(out, t.held[0].r)
		t.held = t.held[1:]
	}
	if end := t.end(); end >= 0 && t.read >= end && (len(t.held) == 0 || t.held[0].r.Offset >= end) {
		t.held = nil
		return out, true
	}
	return out, false
}

// decide applies the marker of producer's transaction to its undecided
// held records: a marker after the time bound cuts the prefix at the
// first of them; else an abort leaves them out and a commit decides them.
func (t *txnPrefix) decide(producer int64, abort, late bool) {
	kept := t.held[:0]
	for _, h := range t.held {
		if !h.decided && h.r.ProducerID == producer {
			if late {
				t.cutAt(h.r.Offset)
				return // held from there on: past the prefix
			}
			if abort {
				continue // never committed: left out
			}
			h.decided = true
		}
		kept = append(kept, h)
	}
	t.held = kept
}

// past reports whether offset is at or after the prefix's end, as known.
func (t *txnPrefix) past(offset int64) bool {
	end := t.end()
	return end >= 0 && offset >= end
}

// end is the offset the prefix ends before, as known: the cut or the
// limit, the smaller; -1 when neither is known.
func (t *txnPrefix) end() int64 {
	switch {
	case t.cut < 0:
		return t.limit
	case t.limit < 0:
		return t.cut
	}
	return min(t.cut, t.limit)
}

func (t *txnPrefix) cutAt(offset int64) {
	if t.cut < 0 || offset < t.cut {
		t.cut = offset
	}
}

// isAbortMarker reports whether the control record r is the marker of an
// aborted transaction (its key's type, Kafka's ControlRecordKey); a key
// that does not read is taken for a commit.
func isAbortMarker(r *kgo.Record) bool {
	var k kmsg.ControlRecordKey
	return k.ReadFrom(r.Key) == nil && k.Type == kmsg.ControlRecordKeyTypeAbort
}
