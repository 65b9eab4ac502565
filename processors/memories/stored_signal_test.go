package memories_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

func signals(t *testing.T, b *bank, id string) []memories.Pending {
	t.Helper()
	_, s, err := memories.History(b.store, events.EntityKey("project:a", id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A signal stored while usage < 3 applies with the next agreeing signal of
// another source within 7 days, whatever usage is by then ("then all of
// them apply"). A walkthrough (2026-11-29) found it stranded: carol's
// negative is stored at usage 2 (her own signal lifts usage to 3), dave's
// agreeing negative an hour later applied alone, and carol's stayed
// applied: false for ever.
func TestStoredSignalAppliesWithTheAgreeingOneAfterUsageReachesThree(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	b.retrieved("m", map[string]any{"source": "token:alice"}, t0)
	b.retrieved("m", map[string]any{"source": "token:bob"}, t0)
	b.signalFrom("m", "token:carol", false, t0.Add(time.Hour))
	if m := b.get("m"); m.Confidence != 0.8 || m.UsageCount != 3 {
		t.Fatalf("after carol's signal at usage 2: confidence %v usage %d, want 0.8 (stored) and 3", m.Confidence, m.UsageCount)
	}
	b.signalFrom("m", "token:dave", false, t0.Add(2*time.Hour))
	if s := signals(t, b, "m"); len(s) != 2 || !s[0].Applied || s[0].Repeat {
		t.Errorf("carol's stored signal after dave's agreeing one within 7 days: %+v; want it applied", s)
	}
	if c := b.get("m").Confidence; !near(c, 0.7) {
		t.Errorf("confidence %v, want 0.8 − 2 × 0.05 = 0.7 (carol's and dave's task_completion negatives)", c)
	}
	changes, _, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if last := changes[len(changes)-1]; last.Reason != "consensus" || len(last.Signals) != 2 || last.Signals[0].EventID != "e3" || last.Signals[1].EventID != "e4" {
		t.Errorf("dave's change: %+v; want reason consensus applying carol's (e3) and dave's (e4)", last)
	}
}

// A stored signal is not taken along by a signal of its own source (that
// source votes once: the stored one is consumed as a repeat), nor when its
// source already applied a vote of its polarity within 7 days, nor when it
// lies more than 7 days before the signal that applies.
func TestStoredSignalKeepsOneVotePerSource(t *testing.T) {
	t.Run("same source", func(t *testing.T) {
		b := newBank(t)
		b.record("m", "explicit", "success", t0)
		b.retrieved("m", map[string]any{"source": "token:alice"}, t0)
		b.retrieved("m", map[string]any{"source": "token:bob"}, t0)
		b.signalFrom("m", "token:carol", false, t0.Add(time.Hour)) // stored, usage 3
		b.signalFrom("m", "token:carol", false, t0.Add(2*time.Hour))
		s := signals(t, b, "m")
		if len(s) != 2 || !s[0].Repeat || !s[1].Applied || s[1].Repeat {
			t.Errorf("carol's second signal at usage 3: %+v; want it applied and her stored one a repeat", s)
		}
		b.signalFrom("m", "token:dave", false, t0.Add(3*time.Hour))
		if c := b.get("m").Confidence; !near(c, 0.7) {
			t.Errorf("confidence %v, want 0.8 − 0.05 (carol, once) − 0.05 (dave) = 0.7", c)
		}
	})
	t.Run("source already voted", func(t *testing.T) {
		b := newBank(t)
		b.record("m", "explicit", "success", t0)
		b.signalFrom("m", "token:x", false, t0.Add(time.Hour))
		b.signalFrom("m", "token:y", false, t0.Add(2*time.Hour)) // consensus: x and y apply, usage 2
		b.signalFrom("m", "token:x", false, t0.Add(3*time.Hour)) // stored: x alone
		b.retrieved("m", map[string]any{"source": "token:z"}, t0.Add(4*time.Hour))
		if m := b.get("m"); !near(m.Confidence, 0.7) || m.UsageCount != 3 {
			t.Fatalf("confidence %v usage %d, want 0.7 and 3", m.Confidence, m.UsageCount)
		}
		b.signalFrom("m", "token:w", false, t0.Add(5*time.Hour))
		s := signals(t, b, "m")
		if len(s) != 4 || !s[2].Repeat || !s[3].Applied || s[3].Repeat {
			t.Errorf("w's signal at usage 3: %+v; want it applied and x's stored second one a repeat (x voted within 7 days)", s)
		}
		if c := b.get("m").Confidence; !near(c, 0.65) {
			t.Errorf("confidence %v, want 0.7 − 0.05 (w only) = 0.65", c)
		}
	})
	t.Run("source already voted, below usage 3", func(t *testing.T) {
		b := newBank(t)
		b.record("m", "explicit", "success", t0)
		b.signalFrom("m", "token:x", false, t0.Add(time.Hour))
		b.signalFrom("m", "token:y", false, t0.Add(2*time.Hour)) // consensus: x and y apply, usage 2
		b.signalFrom("m", "token:x", false, t0.Add(3*time.Hour)) // x voted within 7 days: a repeat at once
		if s := signals(t, b, "m"); len(s) != 3 || !s[2].Applied || !s[2].Repeat {
			t.Errorf("x's second signal at usage 2: %+v; want it a repeat", s)
		}
		changes, _, err := memories.History(b.store, events.EntityKey("project:a", "m"))
		if err != nil {
			t.Fatal(err)
		}
		if last := changes[len(changes)-1]; last.Reason != memories.ReasonRepeat {
			t.Errorf("x's second signal's change: reason %q, want %q", last.Reason, memories.ReasonRepeat)
		}
		b.signalFrom("m", "token:w", false, t0.Add(4*time.Hour)) // w alone: no consensus yet
		if m := b.get("m"); !near(m.Confidence, 0.7) {
			t.Errorf("confidence %v after w's signal, want 0.7: x's second vote must not make w's consensus", m.Confidence)
		}
		if s := signals(t, b, "m"); len(s) != 4 || s[3].Applied {
			t.Errorf("w's signal: %+v; want it stored, waiting for a second source", s)
		}
	})
	t.Run("older than 7 days", func(t *testing.T) {
		b := newBank(t)
		b.record("m", "explicit", "success", t0)
		b.retrieved("m", map[string]any{"source": "token:alice"}, t0)
		b.retrieved("m", map[string]any{"source": "token:bob"}, t0)
		b.signalFrom("m", "token:carol", false, t0.Add(time.Hour))
		b.signalFrom("m", "token:dave", false, t0.Add(8*24*time.Hour))
		s := signals(t, b, "m")
		if len(s) != 2 || s[0].Applied || !s[1].Applied {
			t.Errorf("dave's signal 8 days after carol's stored one: %+v; want dave's applied alone, carol's still stored", s)
		}
		if c := b.get("m").Confidence; !near(c, 0.75) {
			t.Errorf("confidence %v, want 0.75", c)
		}
	})
}
