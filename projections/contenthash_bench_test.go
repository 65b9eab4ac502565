package projections_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkContentHash hashes the bundled sessions' events, as the engine
// does once per consumed record (Item.Sum).
func BenchmarkContentHash(b *testing.B) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var envs []events.Envelope
	for _, r := range recs {
		es, _ := taubench.Events(r)
		envs = append(envs, es...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		projections.ContentHash(&envs[i%len(envs)])
	}
}
