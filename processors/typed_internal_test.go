package processors

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// typedCounter counts the events Apply is called with; wrapped in
// typedCounterTyped it handles memory.feedback.v1 only.
type typedCounter struct {
	seen map[events.Type]int
}

func (c *typedCounter) Name() string           { return "typed-counter" }
func (c *typedCounter) Topics() []events.Topic { return []events.Topic{events.TopicMemories} }
func (c *typedCounter) Apply(tx *projections.Tx, env *events.Envelope) error {
	c.seen[env.Type]++
	return nil
}

type typedCounterTyped struct{ *typedCounter }

func (typedCounterTyped) Types() []events.Type { return []events.Type{events.MemoryFeedback} }

// applyBatch gives a TypedProcessor only the events of its types, moves its
// offset past the others, and leaves the caller's items as they were; a
// plain Processor gets every event.
func TestApplyBatchTypedProcessor(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var items []projections.Item
	for i := 0; i < 6; i++ {
		var env events.Envelope
		if i%2 == 0 {
			env, err = events.New(events.MemoryFeedback, "t", fmt.Sprint("f", i), time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
		} else {
			env, err = events.New(events.MemoryRetrieved, "t", fmt.Sprint("r", i), time.Unix(1700000000, 0), map[string]any{"memory_ids": []string{"m1"}, "query": "q"})
		}
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, projections.Item{Pos: projections.Position{Topic: string(events.TopicMemories), Offset: int64(i)}, Env: &env})
	}
	typed := typedCounterTyped{&typedCounter{seen: map[events.Type]int{}}}
	outs, err := applyBatch(store, typed, items)
	if err != nil {
		t.Fatal(err)
	}
	if typed.seen[events.MemoryFeedback] != 3 || typed.seen[events.MemoryRetrieved] != 0 {
		t.Fatalf("typed processor saw %v, want 3 feedback events only", typed.seen)
	}
	for i, o := range outs {
		if want := []projections.Result{projections.Applied, projections.Ignored}[i%2]; o.Result != want {
			t.Fatalf("item %d: %v, want %v", i, o.Result, want)
		}
	}
	if n, _ := store.NextOffset(typed.Name(), string(events.TopicMemories), 0); n != 6 {
		t.Fatalf("offset %d, want 6", n)
	}
	for i, it := range items {
		if it.Skip {
			t.Fatalf("item %d of the caller marked skipped", i)
		}
	}
	plain := &typedCounter{seen: map[events.Type]int{}}
	if _, err := applyBatch(store, plainName{plain}, items); err != nil {
		t.Fatal(err)
	}
	if plain.seen[events.MemoryFeedback] != 3 || plain.seen[events.MemoryRetrieved] != 3 {
		t.Fatalf("plain processor saw %v, want every event", plain.seen)
	}
}

// plainName is a typedCounter under another name, without Types.
type plainName struct{ *typedCounter }

func (plainName) Name() string { return "plain-counter" }

// typedCounterFiltered also refuses the feedback events of memory m2.
type typedCounterFiltered struct{ typedCounterTyped }

func (typedCounterFiltered) ActsOn(env *events.Envelope) bool {
	var d events.MemoryFeedbackData
	return env.Decode(&d) == nil && d.MemoryID != "m2"
}

// applyBatch and actsOn skip the events a FilteredProcessor's ActsOn
// refuses as they skip other types: no Apply call, offset moved past them,
// and actsOn (which picks the letterer of a conflicting duplicate and a
// replay's last event) agrees.
func TestApplyBatchFilteredProcessor(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var items []projections.Item
	for i := 0; i < 6; i++ {
		mem := "m1"
		if i%3 == 2 {
			mem = "m2"
		}
		env, err := events.New(events.MemoryFeedback, "t", fmt.Sprint("f", i), time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: mem, Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, projections.Item{Pos: projections.Position{Topic: string(events.TopicMemories), Offset: int64(i)}, Env: &env})
	}
	f := typedCounterFiltered{typedCounterTyped{&typedCounter{seen: map[events.Type]int{}}}}
	outs, err := applyBatch(store, f, items)
	if err != nil {
		t.Fatal(err)
	}
	if f.seen[events.MemoryFeedback] != 4 {
		t.Fatalf("filtered processor applied %d events, want the 4 of m1", f.seen[events.MemoryFeedback])
	}
	for i, o := range outs {
		want := projections.Applied
		if i%3 == 2 {
			want = projections.Ignored
		}
		if o.Result != want {
			t.Fatalf("item %d: %v, want %v", i, o.Result, want)
		}
		if got := actsOn(f, items[i].Env); got != (want == projections.Applied) {
			t.Fatalf("item %d: actsOn %v, applyBatch %v", i, got, o.Result)
		}
	}
	if n, _ := store.NextOffset(f.Name(), string(events.TopicMemories), 0); n != 6 {
		t.Fatalf("offset %d, want 6", n)
	}
}
