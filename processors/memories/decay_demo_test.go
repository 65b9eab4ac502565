package memories_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// The demo's bank survives `serve`'s ticks: the deterministic memories of
// the 200 bundled tau-bench sessions (recorded with their 2024 times) go
// through the memory bank, then a tick at 2026-11-24 (the first one
// `serve --decay-interval 24h` would write a day after start) and one a day
// later. None is pruned; the second tick takes one day of decay
// (0.05 / 30) from each. Under the old time base (age from the recording
// event's time) that tick pruned every one of them.
func TestDecayKeepsDemoBank(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	b := newBank(t)
	initial := map[string]float64{}
	var oldRulePrunes int
	first := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			t.Fatal(err)
		}
		mems, err := distill.Deterministic{}.Extract(context.Background(), distill.NewSession(in, flux.Evaluate(in)))
		if err != nil {
			t.Fatal(err)
		}
		last := envs[len(envs)-1]
		at, err := last.EventTime()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			id := distill.MemoryID(taubench.Scope, m.Title, m.Content)
			if err := b.send(events.MemoryRecorded, at, taubench.Scope, events.MemoryRecordedData{MemoryID: id, Title: m.Title,
				Description: m.Description, Content: m.Content, Outcome: m.Outcome, Tags: m.Tags, Source: "distilled",
				SourceSession: taubench.SessionID(r.TaskID, r.Trial)}); err != nil {
				t.Fatal(err)
			}
			if _, seen := initial[id]; !seen {
				c := memories.InitialConfidence("distilled", m.Outcome)
				initial[id] = c
				if c-memories.Decay(at, first.Add(24*time.Hour)) < memories.PruneBelow {
					oldRulePrunes++
				}
			}
		}
	}
	b.tick(first)
	b.tick(first.Add(24 * time.Hour))
	day := memories.DecayPerMonth / 30
	for id, c := range initial {
		m, ok, err := memories.Get(b.store, events.EntityKey(taubench.Scope, id))
		if err != nil || !ok {
			t.Fatalf("memory %s: %v %v", id, ok, err)
		}
		if m.Pruned || !near(m.Confidence, memories.Clamp(c-day)) {
			t.Fatalf("memory %s after two ticks a day apart: confidence %v pruned %v, want %v", id, m.Confidence, m.Pruned, memories.Clamp(c-day))
		}
	}
	if len(initial) < 100 {
		t.Fatalf("%d memories from the demo sessions, expected the bank of the demo", len(initial))
	}
	t.Logf("%d memories kept after two ticks; the old time base would have pruned %d of them", len(initial), oldRulePrunes)
}
