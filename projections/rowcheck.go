package projections

import (
	"errors"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
)

// MaxRowBytes is the largest value an Apply call may write to one row
// (64 MiB). A row that size is a row that grows without bound (a list
// appended to on every event): each write copies it into the memtable
// and the write-ahead log, and a batch of such rows nears Pebble's 4 GiB
// batch limit, past which the commit fails as a store error and the
// partition is retried, stalled, for ever. The largest row the default
// processors write on the bundled tau-bench sessions is a few tens of
// kilobytes. Refusing the write makes the event's Apply call fail: a
// deterministic rejection, dead-lettered like any other.
const MaxRowBytes = 64 << 20

// ErrBadRow is the error (errors.Is) of a Set, Put, SetJSON or Delete
// with an empty key or, for the writes, a value larger than MaxRowBytes.
// The row is not written, and the Apply call fails with the error even
// when the processor ignored it: an empty key is the projection's prefix
// itself (Scan("") would return it as a row named ""), which a processor
// only writes by mistake.
var ErrBadRow = errors.New("projections: bad row")

// checkRow returns nil when key and an n-byte value may be written (n < 0:
// a delete), else an ErrBadRow naming the projection, the operation and
// the reason, which it also keeps for safeApply.
func (t *Tx) checkRow(op, key string, n int) error {
	var err error
	switch {
	case key == "":
		err = fmt.Errorf("%w: %s %s: empty key", ErrBadRow, t.proj, op)
	case n > MaxRowBytes:
		err = fmt.Errorf("%w: %s %s %q: value of %d bytes, larger than MaxRowBytes (%d)", ErrBadRow, t.proj, op, key, n, MaxRowBytes)
	default:
		return nil
	}
	if t.invalid == nil {
		t.invalid = err
	}
	return err
}

// RowAccess is told of each row an Apply call reads or writes through its
// Tx: the projection, the event being applied and the row's key
// (relative to the projection; a Scan reports each row it visits, a Get
// or Has the row asked for, present or not). processortest uses it to
// check a processor's processors.KeyedState claim: rows touched by events
// of two record keys are state that spans keys.
type RowAccess func(projection string, cause *events.Envelope, row string)

// OnRowAccess registers fn, replacing any registered before (nil: none,
// the default, which costs an Apply call nothing). Register it before
// processors start; it runs on the applying goroutines, concurrently for
// concurrent partitions.
func (s *Store) OnRowAccess(fn RowAccess) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rowAccess = fn
}

func (s *Store) rowAccessFunc() RowAccess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rowAccess
}

func (t *Tx) accessed(key string) {
	if t.access != nil {
		t.access(t.proj, t.cause, key)
	}
}
