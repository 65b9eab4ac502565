package processors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnPrefix keeps what a read-committed consumer had at the bound: a
// record stamped after it ends the prefix, and so does the first record
// of a transaction whose marker is stamped after it (and everything after
// that record), while a transaction committed by the bound is in, and
// records after an undecided one wait for its marker.
func TestTxnPrefix(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// a record: offset, second, producer (0: not transactional), control
	// (a marker: a commit, or an abort with abort set)
	type rec struct {
		off     int64
		sec     int
		pid     int64
		control bool
		abort   bool
	}
	mk := func(r rec) *kgo.Record {
		k := &kgo.Record{Offset: r.off, Timestamp: at(r.sec), ProducerID: r.pid}
		if r.pid != 0 {
			k.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: r.control})
		}
		if r.control {
			key := kmsg.NewControlRecordKey()
			key.Type = kmsg.ControlRecordKeyTypeCommit
			if r.abort {
				key.Type = kmsg.ControlRecordKeyTypeAbort
			}
			k.Key = key.AppendTo(nil)
		}
		return k
	}
	cases := []struct {
		name     string
		recs     []rec
		until    int
		limit    int64  // the offset bound; 0: none
		want     string // offsets applied, in order
		complete bool
	}{
		{"plain records cut at the first later one", []rec{{0, 1, 0, false, false}, {1, 2, 0, false, false}, {2, 9, 0, false, false}, {3, 3, 0, false, false}}, 5, 0, "0 1", true},
		{"a transaction committed in time is in", []rec{{0, 1, 7, false, false}, {1, 2, 0, false, false}, {2, 3, 7, true, false}, {3, 4, 0, false, false}}, 5, 0, "0 1 3", false},
		{"a transaction committed late cuts at its first record", []rec{{0, 1, 0, false, false}, {1, 2, 7, false, false}, {2, 3, 0, false, false}, {3, 8, 7, true, false}, {4, 4, 0, false, false}}, 5, 0, "0", true},
		{"an earlier transaction in time, a later one late", []rec{{0, 1, 7, false, false}, {1, 2, 8, false, false}, {2, 3, 7, true, false}, {3, 9, 8, true, false}}, 5, 0, "0", true},
		{"a late marker of a transaction after the cut changes nothing", []rec{{0, 1, 0, false, false}, {1, 6, 0, false, false}, {2, 2, 7, false, false}, {3, 8, 7, true, false}}, 5, 0, "0", true},
		// read uncommitted, the aborted records come too (a re-test: an
		// abort after the bound did not cut, reading committed)
		{"a transaction aborted in time is left out", []rec{{0, 1, 7, false, false}, {1, 2, 0, false, false}, {2, 3, 7, true, true}, {3, 4, 0, false, false}}, 5, 0, "1 3", false},
		{"a transaction aborted late cuts at its first record", []rec{{0, 1, 0, false, false}, {1, 2, 7, false, false}, {2, 3, 0, false, false}, {3, 8, 7, true, true}, {4, 4, 0, false, false}}, 5, 0, "0", true},
		{"a transaction never decided holds the rest", []rec{{0, 1, 0, false, false}, {1, 2, 7, false, false}, {2, 3, 0, false, false}, {3, 4, 0, false, false}}, 5, 0, "0", false},
		{"two producers: one aborted, one committed, in time", []rec{{0, 1, 7, false, false}, {1, 1, 8, false, false}, {2, 2, 7, true, true}, {3, 2, 8, true, false}, {4, 3, 0, false, false}}, 5, 0, "1 4", false},
		// an --until position's partition: the offset alone bounds it, and
		// a marker past the offset still decides the records before it
		{"a position: committed after the offset, in", []rec{{0, 1, 7, false, false}, {1, 2, 0, false, false}, {2, 3, 0, false, false}, {3, 9, 7, true, false}}, 0, 2, "0 1", true},
		{"a position: aborted after the offset, out", []rec{{0, 1, 7, false, false}, {1, 2, 0, false, false}, {2, 3, 0, false, false}, {3, 9, 7, true, true}}, 0, 2, "1", true},
		{"a position: plain records up to the offset", []rec{{0, 1, 0, false, false}, {1, 9, 0, false, false}, {2, 9, 0, false, false}}, 0, 2, "0 1", true},
	}
	for _, c := range cases {
		limit := int64(-1)
		if c.limit > 0 {
			limit = c.limit
		}
		until := at(c.until)
		if c.until == 0 {
			until = time.Time{}
		}
		tp := newTxnPrefix(until, limit)
		var got []string
		complete := false
		for _, r := range c.recs {
			out, done := tp.add(mk(r))
			for _, o := range out {
				got = append(got, fmt.Sprint(o.Offset))
			}
			if done {
				complete = true
				break
			}
		}
		if g := strings.Join(got, " "); g != c.want || complete != c.complete {
			t.Errorf("%s: applied %q complete %v, want %q complete %v", c.name, g, complete, c.want, c.complete)
		}
	}
}
