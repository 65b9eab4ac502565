package clock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors/clock"
)

// A wall clock that steps a year ahead, then an hour back, while serve
// runs (a clock set by hand, a VM resumed with a stale time) does not move
// the ticks' times by the step: a tick's time is what the memory bank's
// decay counts as age, so the year's step took 0.6 from every memory's
// confidence at one tick and pruned the whole bank for good (the log
// replays it), and the hour back moved no decay clock until the wall
// clock caught up. The ticks keep the time that passed, on the monotonic
// clock, and the step is reported.
func TestTicksFollowTheTimeThatPassedNotAStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer brk.Close()
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	const interval = 100 * time.Millisecond
	base, start := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC), time.Now()
	wall := func() time.Time { // a year ahead from 250 ms, an hour back from 550 ms
		d := time.Since(start)
		switch {
		case d >= 550*time.Millisecond:
			d += 365*24*time.Hour - time.Hour
		case d >= 250*time.Millisecond:
			d += 365 * 24 * time.Hour
		}
		return base.Add(d)
	}
	var mu sync.Mutex
	var reported []string
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&clock.Ticker{Producer: prod, Interval: interval, Now: wall, OnError: func(err error) {
			mu.Lock()
			reported = append(reported, err.Error())
			mu.Unlock()
		}}).Run(runCtx)
	}()

	cons, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics(string(events.TopicMemories)))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var ticks []time.Time
	for len(ticks) < 9 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			env, err := events.FromRecord(rec)
			if err != nil || env.Type != events.ClockTick {
				t.Fatalf("record %d: %v %s", rec.Offset, err, env.Type)
			}
			at, err := env.EventTime()
			if err != nil {
				t.Fatal(err)
			}
			ticks = append(ticks, at)
		})
	}
	stop()
	<-done
	if len(ticks) < 9 {
		t.Fatalf("%d ticks within 30 s, want 9", len(ticks))
	}
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]); d <= 0 || d > time.Minute {
			t.Errorf("tick %d is %s after tick %d (%s → %s): want the time that passed, about %s", i, d, i-1, ticks[i-1].Format(time.RFC3339Nano), ticks[i].Format(time.RFC3339Nano), interval)
		}
	}
	if last := ticks[len(ticks)-1].Sub(base); last > time.Minute {
		t.Errorf("the last tick is %s after the start: the step counted", last)
	}
	mu.Lock()
	defer mu.Unlock()
	var ahead, behind bool
	steps := 0
	for _, r := range reported {
		if strings.Contains(r, "stepped") {
			steps++
		}
		ahead = ahead || strings.Contains(r, "stepped 8760h0m0s ahead")
		behind = behind || strings.Contains(r, "stepped 1h0m0s back")
	}
	if !ahead || !behind || steps != 2 {
		t.Errorf("reported %q: want the step ahead and the step back named, once each", reported)
	}
}
