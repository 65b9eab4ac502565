package pipeline_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/processors/bench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/processortest"
)

// The default processors that claim processors.KeyedState keep to it on
// the bundled tau-bench sessions: no row of theirs is read or written by
// the events of two record keys (processortest.CheckStatePerKey). The
// engine applies their partitions concurrently on that claim.
func TestDefaultProcessorsStatePerKey(t *testing.T) {
	envs, err := bench.Events(3000)
	if err != nil {
		t.Fatal(err)
	}
	tt := processortest.New(t, pipeline.DefaultProcessors(), processortest.InMemory(), processortest.Partitions(4))
	for i := 0; i < len(envs); i += 100 {
		if _, err := tt.Publish(envs[i:min(i+100, len(envs))]...); err != nil {
			t.Fatal(err)
		}
	}
	processortest.CheckStatePerKey(t, tt)
}
