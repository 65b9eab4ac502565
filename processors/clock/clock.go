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

// Ticker writes a tick every Interval. The first tick comes one interval
// after Run starts, so a short-lived process (the demo) writes none.
type Ticker struct {
	Producer *events.Producer
	// Interval between ticks (default 24 h, the decay interval of the
	// ReasoningBank design).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnError is told about ticks that could not be written.
	OnError func(error)
}

// Run ticks until ctx ends.
func (t *Ticker) Run(ctx context.Context) {
	if t.Interval <= 0 {
		t.Interval = 24 * time.Hour
	}
	if t.Now == nil {
		t.Now = time.Now
	}
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

// Tick writes one tick now and waits for the broker's acknowledgement.
func (t *Ticker) Tick(ctx context.Context) error {
	now := t.Now().UTC()
	env, err := events.New(events.ClockTick, "chronicle/clock", "tick-"+now.Format(time.RFC3339Nano), now, map[string]any{"interval_seconds": t.Interval.Seconds()})
	if err != nil {
		return err
	}
	if err := t.Producer.PublishDerived(ctx, env); err != nil {
		return fmt.Errorf("clock: tick %s: %w", env.ID, err)
	}
	return nil
}
