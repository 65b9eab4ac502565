package processors

import (
	"testing"
	"time"
)

// TestOwnershipTransitions: before the first assignment and between a
// revoke (or loss) and the next assignment the instance is rebalancing;
// an assignment records each partition's restore, progress moves its next
// offset, a revoke forgets it.
func TestOwnershipTransitions(t *testing.T) {
	o := newOwnership()
	if s := o.snapshot(); !s.Rebalancing || len(s.Partitions) != 0 {
		t.Fatalf("before the first assignment: %+v", s)
	}
	o.assigned(map[string]map[int32][2]int64{"t": {0: {0, 10}, 1: {5, 5}}})
	s := o.snapshot()
	if s.Rebalancing || len(s.Partitions) != 2 || s.Partitions[0].RestoreRemaining() != 10 || s.Partitions[1].RestoreRemaining() != 0 {
		t.Fatalf("after assignment: %+v", s)
	}
	before := s.Partitions[0].LastProgress
	time.Sleep(time.Millisecond)
	o.committed("t", 0)
	o.advanced("t", 0, 4)
	o.advanced("t", 0, 3) // never backwards
	s = o.snapshot()
	if p := s.Partitions[0]; p.Next != 4 || p.RestoreRemaining() != 6 || !p.LastProgress.After(before) {
		t.Fatalf("after progress: %+v", p)
	}
	o.revoked(map[string][]int32{"t": {1}})
	if s := o.snapshot(); !s.Rebalancing || len(s.Partitions) != 1 || s.Partitions[0].Partition != 0 {
		t.Fatalf("after a revoke: %+v", s)
	}
	o.assigned(nil) // cooperative: the next assignment may add nothing
	if s := o.snapshot(); s.Rebalancing || len(s.Partitions) != 1 {
		t.Fatalf("after an empty assignment: %+v", s)
	}
	o.committed("t", 7) // a partition not owned is ignored
	o.advanced("u", 0, 9)
	if s := o.snapshot(); len(s.Partitions) != 1 {
		t.Fatalf("progress on an unowned partition added it: %+v", s)
	}
}
