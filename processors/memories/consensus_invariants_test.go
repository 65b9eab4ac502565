package memories_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/memories"
)

// TestConsensusInvariants drives Consensus as feedback does (the
// stored rows, the new signal last, apply and repeats marked) over random
// sequences and checks: an index is never in both lists nor applied twice;
// the signals applied in one call have distinct sources; below
// ConsensusUsage an application has ConsensusSignals sources; and a source
// never has two applied (non-repeat) signals of one polarity within
// ConsensusWindow of each other (one vote per source and window).
func TestConsensusInvariants(t *testing.T) {
	srcs := []string{"a", "b", "c", ""}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := int64(0); seed < 20000; seed++ {
		r := rand.New(rand.NewSource(seed))
		var stored []memories.Pending
		usage := r.Intn(3)
		now := t0
		n := 2 + r.Intn(10)
		var trace []string
		for k := 0; k < n; k++ {
			switch r.Intn(6) {
			case 0:
				now = now.Add(time.Duration(r.Intn(10*24)) * time.Hour)
			case 1:
				now = now.Add(-time.Duration(r.Intn(3*24)) * time.Hour)
			default:
				now = now.Add(time.Hour)
			}
			if r.Intn(4) == 0 {
				usage++
			}
			sig := memories.Pending{EventID: string(rune('A' + k)), Time: now.Format(time.RFC3339Nano), Positive: r.Intn(5) != 0, Source: srcs[r.Intn(len(srcs))], Delta: 0.05}
			stored = append(stored, sig)
			apply, repeats := memories.Consensus(usage, stored, now)
			trace = append(trace, sig.Source+"@"+sig.Time+" usage "+string(rune('0'+usage)))
			in := map[int]bool{}
			srcApplied := map[string]bool{}
			for _, i := range apply {
				if in[i] || stored[i].Applied {
					t.Fatalf("seed %d: index %d applied twice (%v)", seed, i, trace)
				}
				in[i] = true
				if srcApplied[stored[i].SourceKey()] {
					t.Fatalf("seed %d: two signals of %q applied in one call (%v)", seed, stored[i].SourceKey(), trace)
				}
				srcApplied[stored[i].SourceKey()] = true
			}
			for _, i := range repeats {
				if in[i] || stored[i].Applied {
					t.Fatalf("seed %d: index %d in apply and repeats, or already applied (%v)", seed, i, trace)
				}
				in[i] = true
			}
			if usage < memories.ConsensusUsage && len(apply) > 0 && len(srcApplied) < memories.ConsensusSignals {
				t.Fatalf("seed %d: below usage %d applied with %d sources", seed, usage, len(srcApplied))
			}
			for _, i := range repeats {
				stored[i].Applied, stored[i].Repeat = true, true
			}
			for _, i := range apply {
				stored[i].Applied = true
			}
			if last := stored[len(stored)-1]; last.Applied && !last.Repeat {
				for _, p := range stored {
					pt, _ := time.Parse(time.RFC3339Nano, p.Time)
					if d := now.Sub(pt); !p.Applied && p.Positive == last.Positive && d <= memories.ConsensusWindow && d >= -memories.ConsensusWindow {
						t.Errorf("seed %d: %s's signal at %s stays stored though %s's agreeing signal at %s applied (trace %v)", seed, p.SourceKey(), p.Time, last.SourceKey(), last.Time, trace)
					}
				}
			}
			for i := range stored {
				for j := i + 1; j < len(stored); j++ {
					p, q := stored[i], stored[j]
					if !p.Applied || p.Repeat || !q.Applied || q.Repeat || p.Positive != q.Positive || p.SourceKey() != q.SourceKey() {
						continue
					}
					pt, _ := time.Parse(time.RFC3339Nano, p.Time)
					qt, _ := time.Parse(time.RFC3339Nano, q.Time)
					if d := pt.Sub(qt); d <= memories.ConsensusWindow && d >= -memories.ConsensusWindow {
						t.Fatalf("seed %d: source %q voted twice within the window: %s and %s (trace %v)", seed, p.SourceKey(), p.Time, q.Time, trace)
					}
				}
			}
		}
	}
}
