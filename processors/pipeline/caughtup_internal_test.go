package pipeline

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

type twoTopics struct{}

func (twoTopics) Name() string { return "two" }
func (twoTopics) Topics() []events.Topic {
	return []events.Topic{events.TopicSessions, events.TopicEvaluations}
}
func (twoTopics) Apply(*projections.Tx, *events.Envelope) error { return nil }

// TestUnlistedTopicIsNotCaughtUp: a lag listing without a partition of
// one of a processor's topics is not "caught up", whatever the others say.
func TestUnlistedTopicIsNotCaughtUp(t *testing.T) {
	procs := []processors.Processor{twoTopics{}}
	both := []processors.PartitionLag{
		{Processor: "two", Topic: string(events.TopicSessions), Partition: 0},
		{Processor: "two", Topic: string(events.TopicEvaluations), Partition: 0},
	}
	if !listsEveryTopic(both, procs) {
		t.Fatal("every topic listed, reported unlisted")
	}
	if listsEveryTopic(both[:1], procs) {
		t.Fatal("chronicle.evaluations not listed, reported listed")
	}
	if listsEveryTopic(nil, procs) {
		t.Fatal("nothing listed, reported listed")
	}
}
