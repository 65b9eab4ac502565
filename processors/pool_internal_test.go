package processors

import (
	"runtime"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// poolProc is a processor for the pool test: keyed or not (serial).
type poolProc struct {
	name  string
	keyed bool
}

func (p poolProc) Name() string                                  { return p.name }
func (p poolProc) Topics() []events.Topic                        { return []events.Topic{events.TopicSessions} }
func (p poolProc) Apply(*projections.Tx, *events.Envelope) error { return nil }
func (p poolProc) StatePerKey() bool                             { return p.keyed }

// A batch waiting for a serial processor's lock does not hold one of the
// pool's GOMAXPROCS slots: while partition 1's batch of the serial
// processor runs, partition 2's waits for it, and a keyed processor's batch
// of partition 3 runs meanwhile. Before, the waiting batch held a slot, so
// with two slots (the 2-core machine) every other batch waited for the
// serial one and a core stayed idle (Replay and the live engine share the
// pool).
func TestPoolWaitingForASerialLockHoldsNoSlot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	serial, keyed := poolProc{name: "serial"}, poolProc{name: "keyed", keyed: true}
	pl := newPool([]Processor{serial, keyed})
	release := make(chan struct{})
	inSerial := make(chan int, 2)
	done := make(chan error, 3)
	runSerial := func(part int) {
		done <- pl.each([]Processor{serial}, func(int, Processor) error {
			inSerial <- part
			<-release
			return nil
		})
	}
	go runSerial(1)
	if got := <-inSerial; got != 1 {
		t.Fatalf("partition %d in the serial processor first", got)
	}
	go runSerial(2)
	time.Sleep(200 * time.Millisecond) // partition 2 waits for the serial lock
	keyedRan := make(chan struct{})
	go func() {
		done <- pl.each([]Processor{keyed}, func(int, Processor) error { close(keyedRan); return nil })
	}()
	select {
	case <-keyedRan:
	case <-time.After(5 * time.Second):
		t.Errorf("partition 3's keyed batch did not run within 5 s while partition 1 held the serial lock and partition 2 waited for it")
	}
	close(release)
	if got := <-inSerial; got != 2 {
		t.Errorf("partition %d in the serial processor second, want 2", got)
	}
	for i := 0; i < 3; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
