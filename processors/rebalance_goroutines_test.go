package processors_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// TestRebalancesLeaveGoroutinesFlat is the CI-sized form of a cluster soak
// (an SRE's walkthrough, 2026-12-07: a broker and three serve instances
// for 42 min at about 4 events/s, one of two instances stopped every
// 2.5 min, 14 stops of which 3 SIGKILL, and the third, never restarted,
// SIGSTOPped past its session timeout 3 times; that member's goroutines
// stayed within 125–188 (median 166; fewer while it owned fewer
// partitions), its fds within 47–94): a long-lived Runner A sees a second
// instance B join and leave several times, each time giving up half of the
// 4 partitions and taking them back. Once A owns every partition again and
// B is closed, the process holds no more goroutines than after the first
// round (a small tolerance for franz-go's transient ones): a goroutine
// left per assignment, revoke or closed member grows with the rounds.
func TestRebalancesLeaveGoroutinesFlat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})
	publishRecords(ctx, t, prod, recs[:8])

	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	group := string(processors.ProcessorsGroup)
	procs := []processors.Processor{sessions.Processor{}}
	fast := []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond)}

	a := startInstance(t, "A", brokers, procs, fast...)
	ownsAll := func() string {
		if owned := assignment(t, adm, group); len(owned["instance-A"]) != 4 || len(owned) != 1 {
			return fmt.Sprintf("A does not own all 4 partitions alone: %v", owned)
		}
		return ""
	}
	waitFor(t, 20*time.Second, ownsAll)

	round := func(i int) {
		b := startInstance(t, fmt.Sprintf("B%d", i), brokers, procs, fast...)
		waitFor(t, 20*time.Second, func() string {
			owned := assignment(t, adm, group)
			if len(owned["instance-A"]) == 0 || len(owned["instance-"+b.name]) == 0 {
				return fmt.Sprintf("round %d: no split of the partitions: %v", i, owned)
			}
			return ""
		})
		b.stop()
		waitFor(t, 20*time.Second, ownsAll)
	}

	// the first round starts what lives as long as the process (franz-go's
	// and the runtime's pools): the baseline is taken after it
	round(0)
	base := settledGoroutines()
	const rounds, tolerance = 6, 8
	for i := 1; i <= rounds; i++ {
		round(i)
	}
	// A is still running: it must still be processing (a rebalance that
	// left goroutines behind may also have left A stuck)
	publishRecords(ctx, t, prod, recs[8:12])
	waitFor(t, 20*time.Second, func() string {
		if n := a.sessionCount(t); n != 12 {
			return fmt.Sprintf("A holds %d sessions of 12 after %d rounds", n, rounds+1)
		}
		return ""
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+tolerance {
			t.Logf("goroutines: %d after the first round, %d after %d more", base, n, rounds)
			return
		}
		if time.Now().After(deadline) {
			var dump bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Fatalf("goroutines: %d after the first round, %d after %d more rounds of a member joining and leaving (tolerance %d); still running:\n%s",
				base, n, rounds, tolerance, dump.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settledGoroutines is runtime.NumGoroutine once it stopped falling: the
// lowest of its values over 1 s, sampled every 50 ms (goroutines of a
// closed client end shortly after its Close returned).
func settledGoroutines() int {
	low := runtime.NumGoroutine()
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		low = min(low, runtime.NumGoroutine())
	}
	return low
}
