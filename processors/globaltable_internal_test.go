package processors

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

type fixedOwnership Ownership

func (f fixedOwnership) Ownership() Ownership { return Ownership(f) }

// tableOnly is a global table on chronicle.memories for the test.
type tableOnly struct{}

func (tableOnly) Name() string                                  { return "table" }
func (tableOnly) Topics() []events.Topic                        { return []events.Topic{events.TopicMemories} }
func (tableOnly) Apply(*projections.Tx, *events.Envelope) error { return nil }
func (tableOnly) GlobalTable() bool                             { return true }

// A topic both a global table and the group's engine read (the session
// index's table and the memory bank on chronicle.memories) is one entry
// of WithTasks' ownership, whose Next is the lower of the two: the fenced
// relay commits Next as the partition's relayed frontier and drops the
// rows below it, so a table ahead of the engine would have dropped the
// engine's derived events still to come (memory.created.v1: the demo's log
// held 127 of 290). A table's partition the engine does not read is added
// with the table's Next.
func TestWithTasksMergesASharedPartition(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mem := string(events.TopicMemories)
	for off := int64(0); off < 9; off++ { // the table applied offsets 0..8: next 9
		env, err := events.New(events.MemoryConfidenceChanged, "test", "e"+string(rune('a'+off)), time.Unix(0, 0), map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Apply("table", projections.Position{Topic: mem, Offset: off}, &env, func(*projections.Tx, *events.Envelope) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	g, err := NewGlobalTableRunner(GlobalTableConfig{Brokers: []string{"x"}, Store: store, Processors: []Processor{tableOnly{}}})
	if err != nil {
		t.Fatal(err)
	}
	g.parts = []tp{{mem, 0}, {mem, 1}}
	engine := fixedOwnership{Partitions: []OwnedPartition{
		{Topic: string(events.TopicSessions), Partition: 0, Assignment: 3, Next: 100},
		{Topic: string(events.TopicSessions), Partition: 1, Assignment: 3, Next: 50},
		{Topic: mem, Partition: 0, Assignment: 3, Next: 5}, // the engine's memory bank: behind the table
	}}
	own := g.WithTasks(engine).Ownership()
	byKey := map[tp][]OwnedPartition{}
	for _, p := range own.Partitions {
		byKey[tp{p.Topic, p.Partition}] = append(byKey[tp{p.Topic, p.Partition}], p)
	}
	if got := byKey[tp{mem, 0}]; len(got) != 1 || got[0].Next != 5 {
		t.Fatalf("chronicle.memories/0: %+v, want one entry with the engine's Next 5", got)
	}
	if got := byKey[tp{mem, 1}]; len(got) != 1 || got[0].Next != 0 || got[0].Assignment != 3 {
		t.Fatalf("chronicle.memories/1 (the table's only, task 1): %+v, want one entry, Next 0", got)
	}
	// the table behind the engine: the table's Next
	engine.Partitions[2].Next = 20
	if got := g.WithTasks(engine).Ownership().Partitions; got[0].Topic != mem || got[0].Next != 9 {
		t.Fatalf("the table behind the engine: %+v, want chronicle.memories/0 at Next 9", got)
	}
}
