package projections

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"
)

// writeSet holds the writes of one ApplyBatch run — projection rows and
// idempotency keys, the newest value per key — over the store it reads
// through. At commit only the final value of each key goes into the Pebble
// batch.
//
// It replaces a Pebble indexed batch as the run's read-your-writes view.
// An indexed batch keeps every version of a key written in it, and so does
// the memtable after the commit: a processor that rewrites a hot row for
// every event (a scope's totals, a node's counters) made each Scan over
// that prefix step over every version written in the run, so a run of n
// events cost O(n²) (the tool graph's scans: 36% of the default
// processors' CPU at 60,000 events, BenchmarkEngine). Here a key has one
// entry however often it is written, reads are a map lookup, and Scan
// merges the sorted keys (a B-tree, github.com/google/btree) with an
// iterator on the store.
type writeSet struct {
	db   *pebble.DB
	vals map[string]wsEntry
	keys *btree.BTreeG[string] // the keys of vals a scan may cover, sorted
}

// wsEntry is a key's newest write: a value, or a deletion.
type wsEntry struct {
	val []byte
	del bool
}

func newWriteSet(db *pebble.DB) *writeSet {
	return &writeSet{db: db, vals: map[string]wsEntry{}, keys: btree.NewG(32, func(a, b string) bool { return a < b })}
}

// set records val (owned by the write set from now on) for key.
func (w *writeSet) set(key string, val []byte) {
	w.put(key, wsEntry{val: val})
}

// setUnscanned records val for key, a key no scan covers (an idempotency
// key): it stays out of the sorted keys.
func (w *writeSet) setUnscanned(key string, val []byte) {
	w.vals[key] = wsEntry{val: val}
}

// delete records the deletion of key.
func (w *writeSet) delete(key string) {
	w.put(key, wsEntry{del: true})
}

func (w *writeSet) put(k string, e wsEntry) {
	if _, ok := w.vals[k]; !ok {
		w.keys.ReplaceOrInsert(k)
	}
	w.vals[k] = e
}

// get reads key: the run's own write when there is one, else the store.
// The returned value must not be modified.
func (w *writeSet) get(key string) (val []byte, ok bool, err error) {
	if e, hit := w.vals[key]; hit {
		return e.val, !e.del, nil
	}
	v, closer, err := w.db.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// scan calls fn for every live row in [lower, upper) in key order (keys
// with their first strip bytes removed), the run's writes shadowing the
// store's rows, until fn returns false or an error. A value passed to fn
// is only valid during the call.
func (w *writeSet) scan(lower, upper []byte, strip int, fn func(key string, val []byte) (bool, error)) error {
	it, err := w.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	var own []string
	if upper == nil {
		w.keys.AscendGreaterOrEqual(string(lower), func(k string) bool { own = append(own, k); return true })
	} else {
		w.keys.AscendRange(string(lower), string(upper), func(k string) bool { own = append(own, k); return true })
	}
	valid, more := it.First(), true
	for more && err == nil && (valid || len(own) > 0) {
		var c int // < 0: the store's row comes first; 0: the run's write shadows it; > 0: the run's write
		switch {
		case !valid:
			c = 1
		case len(own) == 0:
			c = -1
		default:
			c = strings.Compare(string(it.Key()), own[0])
		}
		if c < 0 {
			var val []byte
			if val, err = rowValue(it); err != nil {
				break
			}
			more, err = fn(string(it.Key()[strip:]), val)
			valid = it.Next()
			continue
		}
		if c == 0 {
			valid = it.Next()
		}
		k := own[0]
		own = own[1:]
		if e := w.vals[k]; !e.del {
			more, err = fn(k[strip:], e.val)
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRecordMax is the most a Pebble batch record adds to its key and
// value: a kind byte and two varint lengths.
const batchRecordMax = 1 + 2*binary.MaxVarintLen32

// size is an upper bound of the bytes writeTo puts into a batch, so that
// the batch is allocated once: a run's batch outgrows the 1 MiB Pebble
// keeps of a pooled batch, and growing it by doubling allocated about
// twice its size and copied it (13.7% of the bytes allocated by
// BenchmarkEngine with CHRONICLE_BENCH_ONLY=replay: the default processors,
// then the replay).
func (w *writeSet) size() int {
	n := 0
	for k, e := range w.vals {
		n += batchRecordMax + len(k) + len(e.val)
	}
	return n
}

// writeTo puts every write into b in key order. A batch commits
// atomically whatever its order, but Pebble inserts its keys into the
// memtable's skiplist one by one in batch order, and an insert starts its
// search where the previous one left off when the new key lies near it
// (arenaskl's Inserter splice); otherwise it searches from the top. Sorted,
// a session's new trace and index rows follow each other; in map order
// nearly every insert searched from the top. BenchmarkPerEventCost (three
// runs alternating with map order): the last 20,000 of 200,000 events
// 22.9–23.3 against 24.8–26.2 µs of CPU each, all 200,000 with their
// flushes 24.2–24.6 against 25.2–27.8 µs; the random idempotency keys
// gain nothing. Sorting costs O(n log n) comparisons of the batch's keys.
func (w *writeSet) writeTo(b *pebble.Batch) error {
	keys := make([]string, 0, len(w.vals))
	for k := range w.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e := w.vals[k]
		var err error
		// Set and Delete copy the key into the batch: the key's bytes
		// are borrowed, not converted
		key := unsafe.Slice(unsafe.StringData(k), len(k))
		if e.del {
			err = b.Delete(key, nil)
		} else {
			err = b.Set(key, e.val, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
