package processors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

type namedProc string

func (n namedProc) Name() string                                { return string(n) }
func (namedProc) Topics() []events.Topic                        { return []events.Topic{events.TopicSessions} }
func (namedProc) Apply(*projections.Tx, *events.Envelope) error { return nil }

// topicProc reads one topic.
type topicProc struct {
	namedProc
	topic events.Topic
}

func (p topicProc) Topics() []events.Topic { return []events.Topic{p.topic} }

// typedProc acts on types, on chronicle.sessions.
type typedProc struct {
	namedProc
	types []events.Type
}

func (p typedProc) Types() []events.Type { return p.types }

// A processor's Name names its projection, offsets and idempotency keys:
// two processors of one name shared them, so the second saw every event
// as a duplicate and was never applied (a Go-package walkthrough's
// processor named "sessions", next to the built-in one, counted nothing),
// and an empty name or one with a '/' was taken although Processor's doc
// forbids the '/'. RunnerConfig, GlobalTableConfig and Replay refuse them,
// naming the index.
func TestProcessorNamesAreChecked(t *testing.T) {
	store := new(projections.Store)
	for _, c := range []struct {
		procs []processors.Processor
		want  string
	}{
		{[]processors.Processor{namedProc("a"), namedProc("b"), namedProc("a")}, `Processors[2]: Name "a" is also `},
		{[]processors.Processor{namedProc("")}, "Processors[0]: Name is empty"},
		{[]processors.Processor{namedProc("a"), namedProc("x/y")}, `Processors[1]: Name "x/y" holds a '/'`},
		{[]processors.Processor{namedProc("a"), nil}, "Processors[1]: nil"}, // it panicked in Name
		// a type its topics never carry was taken and never applied (a
		// Go-package walkthrough)
		{[]processors.Processor{typedProc{"t", []events.Type{events.SessionStarted, events.MemoryFeedback}}},
			"Processors[0] (t): Types()[1] memory.feedback.v1 is written to chronicle.memories, which is not among its Topics() [chronicle.sessions]"},
		{[]processors.Processor{typedProc{"t", []events.Type{"made.up.v1"}}}, `Processors[0] (t): Types()[0] "made.up.v1" is no event type`},
		// a topic Chronicle never creates: Start took it, and
		// WaitCaughtUp failed with "end offsets: UNKNOWN_TOPIC_OR_PARTITION",
		// naming neither the topic nor the processor (a new contributor's
		// walkthrough, 2026-12-07)
		{[]processors.Processor{namedProc("a"), topicProc{"n", "chronicle.notes"}}, `Processors[1] (n): Topics()[0] "chronicle.notes" is no topic of Chronicle's (events.AllTopics)`},
	} {
		err := processors.RunnerConfig{Brokers: []string{"127.0.0.1:9"}, Store: store, Processors: c.procs}.Validate()
		if err == nil || !strings.Contains(err.Error(), "RunnerConfig."+c.want) {
			t.Errorf("RunnerConfig: %v, want %q", err, c.want)
		}
		err = processors.GlobalTableConfig{Brokers: []string{"127.0.0.1:9"}, Store: store, Processors: c.procs}.Validate()
		if err == nil || !strings.Contains(err.Error(), "GlobalTableConfig."+c.want) {
			t.Errorf("GlobalTableConfig: %v, want %q", err, c.want)
		}
	}
	// Replay, whose config has no Validate, checks them before it dials
	_, err := processors.Replay(context.Background(), processors.ReplayConfig{Brokers: []string{"127.0.0.1:9"}, Store: store,
		Processors: []processors.Processor{namedProc("a"), namedProc("a")}})
	if err == nil || !strings.Contains(err.Error(), `ReplayConfig.Processors[1]: Name "a" is also `) {
		t.Errorf("Replay: %v, want the repeated name refused", err)
	}
	// no processor: it replayed nothing and answered zero stats
	_, err = processors.Replay(context.Background(), processors.ReplayConfig{Brokers: []string{"127.0.0.1:9"}, Store: store})
	if err == nil || !strings.Contains(err.Error(), "ReplayConfig.Processors: at least one") {
		t.Errorf("Replay without processors: %v, want it refused", err)
	}
	if err := (processors.RunnerConfig{Brokers: []string{"127.0.0.1:9"}, Store: store, Processors: []processors.Processor{namedProc("a"), namedProc("b"), typedProc{"c", []events.Type{events.SessionStarted}}}}).Validate(); err != nil {
		t.Errorf("two names: %v", err)
	}
}
