// Package clock writes clock.tick.v1 events: the service's time enters
// the log, and processors that need the passing of time (decay) read it
// from there, so a replay sees the same ticks at the same places.
package clock

import (
	"context"
	"fmt"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// MinStep is the smallest wall-clock step a Ticker notices: between two
// ticks the wall clock may move this much (or Interval/100, if more) more
// or less than the time that passed before the tick is stamped with the
// time that passed instead. NTP slews at most 500 ppm (43 s a day), so a
// slewed clock never trips it; a step (a clock set by hand, a VM resumed
// with its old time, NTP's first correction) does.
const MinStep = time.Minute

// Ticker writes a tick every Interval. The first tick comes one interval
// after Run starts, so a short-lived process (the demo) writes none.
//
// A tick's time is the wall clock's while the wall clock keeps with the
// time that passed: after a step (more than MinStep, or Interval/100),
// each tick is stamped with the previous one's time plus the time that
// passed on the monotonic clock, until the wall clock agrees again or the
// process restarts, and OnError is told of each step once. A tick's time is what the
// memory bank's decay counts as age, so a wall clock set a year ahead for
// one tick used to take 0.6 from every memory's confidence and prune the
// whole bank, for good (the log replays it); set back an hour, the next
// ticks moved no decay clock until the wall clock caught up.
type Ticker struct {
	Producer *events.Producer
	// Interval between ticks (default 24 h, the decay interval of the
	// ReasoningBank design).
	Interval time.Duration
	// Now is the wall clock (default time.Now).
	Now func() time.Time
	// Elapsed is the time since Run started on a clock that steps of the
	// wall clock do not move (default: Go's monotonic clock, time.Since
	// of Run's start; it stands still while the host is suspended, so the
	// wall clock's catch-up after a suspend reads as a step).
	Elapsed func() time.Duration
	// OnError is told about ticks that could not be written, and about
	// steps of the wall clock.
	OnError func(error)

	last        time.Time     // the previous tick's time (or Run's start)
	lastWall    time.Time     // the wall clock at it
	lastElapsed time.Duration // Elapsed at it
}

// Run ticks until ctx ends.
func (t *Ticker) Run(ctx context.Context) {
	if t.Interval <= 0 {
		t.Interval = 24 * time.Hour
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	if t.Elapsed == nil {
		start := time.Now()
		t.Elapsed = func() time.Duration { return time.Since(start) }
	}
	t.last = t.Now().UTC()
	t.lastWall, t.lastElapsed = t.last, t.Elapsed()
	tk := time.NewTicker(t.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			if err := t.Tick(ctx); err != nil && t.OnError != nil {
				t.OnError(err)
			}
		}
	}
}

// stamp is the time of a tick written now: the wall clock's while it
// keeps within MinStep (or Interval/100) of the previous tick's time plus
// the monotonic time since it, else that sum; with an error when the wall
// clock stepped since the previous tick (once per step). Outside Run (no
// previous tick) it is the wall clock's.
func (t *Ticker) stamp() (time.Time, error) {
	now := t.Now().UTC()
	if t.Elapsed == nil || t.last.IsZero() {
		return now, nil
	}
	elapsed := t.Elapsed()
	passed := elapsed - t.lastElapsed
	want, prevWall := t.last.Add(passed), t.lastWall
	tolerance := max(MinStep, t.Interval/100)
	at := now
	if now.Sub(want).Abs() > tolerance {
		at = want
	}
	t.last, t.lastWall, t.lastElapsed = at, now, elapsed
	step := now.Sub(prevWall) - passed
	if step.Abs() <= tolerance {
		return at, nil
	}
	dir := "ahead"
	if step < 0 {
		dir = "back"
	}
	return at, fmt.Errorf("clock: the wall clock stepped %s %s since the previous tick (it read %s then and reads %s %s later): ticks keep the time that passed, so this one is stamped %s and decay does not count the step; a service restarted after the step takes the wall clock's time again",
		step.Abs().Round(time.Millisecond), dir, prevWall.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), passed.Round(time.Millisecond), at.Format(time.RFC3339Nano))
}

// Tick writes one tick now and waits for the broker's acknowledgement.
func (t *Ticker) Tick(ctx context.Context) error {
	if t.Now == nil {
		t.Now = time.Now
	}
	now, step := t.stamp()
	if step != nil && t.OnError != nil {
		t.OnError(step)
	}
	env, err := events.New(events.ClockTick, "chronicle/clock", "tick-"+now.Format(time.RFC3339Nano), now, map[string]any{"interval_seconds": t.Interval.Seconds()})
	if err != nil {
		return err
	}
	if err := t.Producer.PublishDerived(ctx, env); err != nil {
		return fmt.Errorf("clock: tick %s: %w", env.ID, err)
	}
	return nil
}
