package events_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// BenchmarkParseEvent parses and validates real tau-bench events, the
// engine's per-record cost before any processor runs: "fast" is ParseEvent
// (its fast path decides every one of these events), "generic" the
// generic path alone (the whole event decoded into any, both schemas), the
// baseline side by side.
func BenchmarkParseEvent(b *testing.B) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var raws [][]byte
	for _, r := range recs[:20] {
		envs, err := taubench.Events(r)
		if err != nil {
			b.Fatal(err)
		}
		for i := range envs {
			rec, err := events.Record(&envs[i])
			if err != nil {
				b.Fatal(err)
			}
			raws = append(raws, rec.Value)
		}
	}
	for _, c := range []struct {
		name  string
		parse func([]byte) (events.Envelope, error)
	}{{"fast", events.ParseEvent}, {"generic", events.ParseGeneric}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := c.parse(raws[i%len(raws)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
