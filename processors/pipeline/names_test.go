package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

type namedProc string

func (n namedProc) Name() string                                { return string(n) }
func (namedProc) Topics() []events.Topic                        { return []events.Topic{events.TopicSessions} }
func (namedProc) Apply(*projections.Tx, *events.Envelope) error { return nil }

// A processor of one's own named as a built-in one shared its projection,
// offsets and idempotency keys, so it saw every event as a duplicate and
// was never applied: a Go-package walkthrough's processor named "sessions"
// counted nothing, without an error. Start refuses the repeated name
// before it opens anything, also for the name of a built-in global table
// (which runs apart from the engine, so neither runner saw both).
func TestStartRefusesARepeatedProcessorName(t *testing.T) {
	for _, name := range []string{sessions.Name, sessions.PatternsName} {
		dir := t.TempDir()
		_, err := pipeline.Start(context.Background(), pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0",
			Processors: append(pipeline.DefaultProcessors(), processors.Processor(namedProc(name)))})
		if err == nil || !strings.Contains(err.Error(), "Config.Processors[") || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("a processor named %q next to the built-in one: %v, want an error naming Config.Processors and the name", name, err)
		}
		if _, serr := os.Stat(filepath.Join(dir, "projections")); serr == nil {
			t.Errorf("%q: the store was created before the refusal", name)
		}
	}
}
