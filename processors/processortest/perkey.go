package processortest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
)

// maxKeyViolations bounds the violations kept per processor (5): one is
// enough to show a claim is wrong, a few show whether it is one row or
// many.
const maxKeyViolations = 5

// keyAccess records, for the tester's processors that claim
// processors.KeyedState, which record key first touched each row of their
// projection (projections.Store.OnRowAccess), and every row touched by
// Apply calls of two record keys.
type keyAccess struct {
	mu         sync.Mutex
	claims     map[string]bool              // processor → claims StatePerKey
	owner      map[string]map[string]string // processor → row → record key
	violations map[string][]string          // processor → descriptions
}

func newKeyAccess(procs []processors.Processor) *keyAccess {
	k := &keyAccess{claims: map[string]bool{}, owner: map[string]map[string]string{}, violations: map[string][]string{}}
	for _, p := range procs {
		if ks, ok := p.(processors.KeyedState); ok && ks.StatePerKey() {
			k.claims[p.Name()] = true
			k.owner[p.Name()] = map[string]string{}
		}
	}
	return k
}

func (k *keyAccess) access(proj string, cause *events.Envelope, row string) {
	if !k.claims[proj] { // written once, in newKeyAccess: no lock needed
		return
	}
	key, err := events.Key(cause)
	if err != nil {
		return // the call fails on it; the engine dead-letters it
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	first, seen := k.owner[proj][row]
	switch {
	case !seen:
		k.owner[proj][row] = key
	case first != key && len(k.violations[proj]) < maxKeyViolations:
		k.violations[proj] = append(k.violations[proj], fmt.Sprintf("row %q was touched by events of record keys %q and %q (event %s)", row, first, key, cause.ID))
	}
}

// CheckStatePerKey fails tb (Errorf, one line per violation, at most five
// per processor) for each of tt's processors that claims
// processors.KeyedState (StatePerKey true) yet read or wrote a row, in the
// Apply calls of tt's Publish and PublishRecord calls so far, for events
// of two record keys (events.Key). The engine applies the partitions of
// such a processor's topics concurrently: a row shared by two keys,
// which may sit on two partitions, is then read and written by two
// batches at once, one overwriting the other, and a replay applies them
// in another order than the live run did. A processor whose rows span
// keys must not claim it (its partitions are then applied one batch at a
// time). A record whose key events.Key cannot give (a dead letter, which
// the engine builds) is not checked. CheckReplay calls it too.
func CheckStatePerKey(tb testing.TB, tt *Tester) {
	tb.Helper()
	tt.keys.mu.Lock()
	defer tt.keys.mu.Unlock()
	for _, p := range tt.procs {
		for _, v := range tt.keys.violations[p.Name()] {
			tb.Errorf("processortest: processor %q claims StatePerKey (processors.KeyedState) but its %s", p.Name(), v)
		}
	}
}
