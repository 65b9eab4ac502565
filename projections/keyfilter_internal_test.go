package projections

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

func filterKey(i int) []byte {
	h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	return dedupKey("p", h[:])
}

// Every added key is "maybe" through four stage growths, from several
// goroutines, and about 1% of keys never added come back "maybe".
func TestKeyFilterNeverMissesAndRarelyLies(t *testing.T) {
	f := newKeyFilter()
	f.ready.Store(true)
	const n, workers = 6 * keyFilterFirstStage, 4
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				f.add(filterKey(i))
			}
		}(w)
	}
	wg.Wait()
	if st := len(*f.stages.Load()); st < 3 {
		t.Fatalf("%d stages after %d keys, want the filter to have grown", st, n)
	}
	for i := 0; i < n; i++ {
		if f.absent(filterKey(i)) {
			t.Fatalf("key %d added but reported absent", i)
		}
	}
	fp := 0
	const probes = 200000
	for i := n; i < n+probes; i++ {
		if !f.absent(filterKey(i)) {
			fp++
		}
	}
	if rate, bound := float64(fp)/probes, 0.02; rate > bound {
		t.Fatalf("false positive rate %.4f over %d stages, want ≤ %.3f", rate, len(*f.stages.Load()), bound)
	} else {
		t.Logf("false positives %.4f with %d stages, %d KiB for %d keys", rate, len(*f.stages.Load()), f.size()>>10, n)
	}
	if newKeyFilter().absent(filterKey(1)) {
		t.Fatal("a filter that is not ready reported a key absent")
	}
}

// A reopened store fills its filter from the stored idempotency keys: a
// redelivered event is still a duplicate, before and after the fill.
func TestReopenedStoreStillFindsDuplicates(t *testing.T) {
	dir := t.TempDir()
	store, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !waitReady(store) {
		t.Fatal("an empty store's filter is not ready")
	}
	envs := make([]events.Envelope, 300)
	for i := range envs {
		envs[i], err = events.New(events.MemoryFeedback, "test", fmt.Sprintf("e%d", i), time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	apply := func(s *Store, topic string, i int) Result {
		t.Helper()
		r, err := s.Apply("p", Position{Topic: topic, Offset: int64(i)}, &envs[i], func(*Tx, *events.Envelope) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range envs {
		if r := apply(store, "a", i); r != Applied {
			t.Fatalf("event %d: %v, want applied", i, r)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// redelivered on another topic (a re-produced record): the idempotency key decides
	if r := apply(store, "b", 0); r != Duplicate {
		t.Fatalf("right after reopening: %v, want duplicate", r)
	}
	if !waitReady(store) {
		t.Fatal("the filter of a store with 300 keys is not ready after 10 s")
	}
	for i := 1; i < len(envs); i++ {
		if r := apply(store, "b", i); r != Duplicate {
			t.Fatalf("event %d after the fill: %v, want duplicate", i, r)
		}
	}
}

func waitReady(s *Store) bool {
	select {
	case <-s.filled:
	case <-time.After(10 * time.Second):
	}
	return s.keys.ready.Load()
}
