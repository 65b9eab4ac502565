package deadletter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestListedLetterSaysItsValueWasOmitted: the row GET /v1/deadletters
// lists for a letter too large to hold its record (processors.
// MaxLetterBytes) carries value_omitted, the record's size, as `chronicle
// deadletter list` does; a small record's row has none. Before, the list
// gave no sign that the letter held no data (a re-test, 2026-12-01).
func TestListedLetterSaysItsValueWasOmitted(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const bigSize = 1_040_000
	// the letters as the engine writes them: the large record's holds its
	// event without data and says the value's size (boundLetter)
	for i, c := range []struct{ id, value, omitted string }{
		{"big-1", `{"specversion":"1.0","id":"big-1","source":"py","type":"coordination.session.started.v1","scope":"project:a","sessionid":"big-1"}`, "1040000"},
		{"small-1", `{"specversion":"1.0","id":"small-1","source":"py","type":"coordination.session.started.v1","scope":"project:a","sessionid":"small-1","data":{}}`, ""},
	} {
		letter := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte("project:a/" + c.id), Value: []byte(c.value), Partition: 0, Offset: int64(i), Headers: []kgo.RecordHeader{
			{Key: processors.HeaderOriginalTopic, Value: []byte(events.TopicSessions)}, {Key: processors.HeaderOriginalPartition, Value: []byte("0")},
			{Key: processors.HeaderOriginalOffset, Value: []byte("7")}, {Key: processors.HeaderHandler, Value: []byte(sessions.Name + "@chronicle.sessions")},
			{Key: processors.HeaderError, Value: []byte("required")}}}
		if c.omitted != "" {
			letter.Headers = append(letter.Headers, kgo.RecordHeader{Key: processors.HeaderValueOmitted, Value: []byte(c.omitted)})
		}
		d, err := processors.LetterOf(letter)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		env := &events.Envelope{SpecVersion: "1.0", ID: c.id, Source: processors.LetterSource, Type: processors.LetterType, Time: d.DeadLetteredAt, Scope: d.Scope, Data: raw}
		pos := projections.Position{Topic: string(events.TopicDeadLetter), Partition: 0, Offset: int64(i)}
		if _, err := store.Apply(deadletter.Name, pos, env, deadletter.Processor{}.Apply); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := deadletter.ListScoped(store, []string{"project:a"}, nil, 10, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range list {
		got[e.EventID] = e.ValueOmitted
	}
	if len(got) != 2 || got["big-1"] != bigSize || got["small-1"] != 0 {
		t.Fatalf("value_omitted by event %v; want big-1: %d, small-1: 0", got, bigSize)
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"value_omitted"`); n != 1 {
		t.Fatalf("the list's JSON names value_omitted %d times; want once (absent on the small letter): %s", n, b)
	}
}
