package memories_test

import (
	"testing"
	"time"
)

// Ticks closer together than the 6-decimal rounding of a confidence can
// show (serve --decay-interval below ~26 s: 0.05 × 20 s / 30 days =
// 3.9e-7) must still decay the memory: the loss is counted from the
// decay clock until it shows, not rounded away tick after tick. Before,
// every tick moved the clock and Clamp rounded the loss to 0, so a memory
// under `serve --decay-interval 20s` never decayed, and each tick added a
// "decay 0.8 → 0.8" row to every memory's history.
func TestShortDecayIntervalStillDecays(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	b.tick(t0)
	changes := b.get("m").Changes
	// one day of 20-second ticks: 4,320 ticks, 0.05/30 lost in all
	at := t0
	for i := 0; i < 24*3600/20; i++ {
		at = at.Add(20 * time.Second)
		b.tick(at)
	}
	m := b.get("m")
	if want := 0.8 - 0.05/30; m.Confidence > want+2e-6 || m.Confidence < want-2e-6 {
		t.Fatalf("after a day of 20 s ticks: confidence %v, want %.6f", m.Confidence, want)
	}
	if n := m.Changes - changes; n > 4320/2 {
		t.Fatalf("%d history rows for a loss of %.6f: a row for every tick that showed no change", n, 0.05/30)
	}
}
