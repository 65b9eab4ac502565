package processors

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnPrefix cuts one partition's records at a replay's time bound as a
// read-committed consumer saw them at that time. Its prefix ends before the
// first record stamped after the bound (Kafka's rule for a time, as
// before), and also before the first record of a transaction committed
// after the bound: its records carry the time they were produced, but a
// read-committed consumer (the live engine) saw none of them, nor any
// record after them on the partition (the last stable offset holds there),
// until the commit. Before, such a transaction was in the as-of state
// while the live service had answered its session 404 (a Python
// integrator's walkthrough with a confluent-kafka transaction left open
// 5 s, 2026-12-01). A transaction's commit time is its marker's timestamp
// (the coordinator's clock when it ended the transaction), which comes
// after its records, so records from the first undecided transactional
// one on are held until the markers decide them. Aborted records never
// reach it (the replay reads committed).
type txnPrefix struct {
	until time.Time
	held  []heldRecord
	cut   int64 // the prefix ends before this offset; -1: not known yet
}

type heldRecord struct {
	r       *kgo.Record
	decided bool // not transactional, or its transaction committed by until
}

func newTxnPrefix(until time.Time) *txnPrefix { return &txnPrefix{until: until, cut: -1} }

// add takes the partition's next record (in offset order, transaction
// markers included) and returns the records now known to be in the
// prefix, in order, and whether the prefix is complete: nothing read
// later can join it.
func (t *txnPrefix) add(r *kgo.Record) (out []*kgo.Record, complete bool) {
	switch {
	case r.Attrs.IsControl():
		// the marker of r.ProducerID's transaction: it decides that
		// producer's undecided held records
		late := r.Timestamp.After(t.until)
		for i := range t.held {
			h := &t.held[i]
			if h.decided || h.r.ProducerID != r.ProducerID {
				continue
			}
			if late {
				t.cutAt(h.r.Offset)
				break
			}
			h.decided = true
		}
	case t.cut >= 0 && r.Offset >= t.cut:
		// past the prefix: read on only for the markers held records wait for
	case r.Timestamp.After(t.until):
		t.cutAt(r.Offset)
	case len(t.held) == 0 && !r.Attrs.IsTransactional():
		out = append(out, r)
	default:
		t.held = append(t.held, heldRecord{r: r, decided: !r.Attrs.IsTransactional()})
	}
	for len(t.held) > 0 && t.held[0].decided && (t.cut < 0 || t.held[0].r.Offset < t.cut) {
		out = append(out, t.held[0].r)
		t.held = t.held[1:]
	}
	if t.cut >= 0 && (len(t.held) == 0 || t.held[0].r.Offset >= t.cut) {
		t.held = nil
		return out, true
	}
	return out, false
}

func (t *txnPrefix) cutAt(offset int64) {
	if t.cut < 0 || offset < t.cut {
		t.cut = offset
	}
}
