package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The README tells a team that subscribes to chronicle.learned with a
// plain Kafka client what it gets and how to use it: which consumer group
// to take (not one of Chronicle's, which all start "chronicle."), the
// record's headers as the code writes them, where each payload's schema
// is, and how to rebuild state from every learned type. A downstream
// consumer's walkthrough (2026-12-07) found none of it: a consumer that
// joined chronicle.processors read nothing without an error, and nothing
// said how memories, patterns or edges follow from the events.
func TestReadmeTellsAKafkaSubscriberHowToConsumeLearned(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "**Consuming `chronicle.learned` with a Kafka client**")
	if !ok {
		t.Fatal("the README has no paragraph on consuming chronicle.learned with a Kafka client")
	}
	sec, _, _ = strings.Cut(sec, "\n\n")
	if !strings.Contains(sec, "outside `chronicle.`") {
		t.Error("the paragraph does not say to name a subscriber's group outside `chronicle.`")
	}
	for _, g := range []string{string(processors.ProcessorsGroup), processors.RelayGroup} {
		if !strings.HasPrefix(g, "chronicle.") {
			t.Errorf("Chronicle's group %q does not start with chronicle., which the README tells subscribers to avoid", g)
		}
		if !strings.Contains(sec, "`"+g+"`") {
			t.Errorf("the paragraph does not name Chronicle's group %s", g)
		}
	}
	// the headers of a learned record, as the relay writes it
	// (processors.OutboxRecords) and as a producer would (events.Record)
	env, err := events.New(events.MemoryPruned, "chronicle/memories", "p1", time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC),
		map[string]any{"memory_id": "m1", "confidence": 0.2, "threshold": 0.3})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	rec, err := events.Record(&env)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != string(events.TopicLearned) {
		t.Fatalf("memory.pruned.v1 goes to %s", rec.Topic)
	}
	relayed := processors.OutboxRecords([]projections.OutboxEntry{{OutboxRecord: projections.OutboxRecord{
		Topic: rec.Topic, Key: string(rec.Key), Type: events.MemoryPruned, Value: rec.Value}}})[0]
	for _, r := range []*kgo.Record{rec, relayed} {
		if len(r.Headers) != 1 || !strings.Contains(sec, "one header,") {
			t.Errorf("a learned record has %d headers; the paragraph must say how many", len(r.Headers))
		}
		for _, h := range r.Headers {
			if !strings.Contains(sec, "`"+h.Key+": "+string(h.Value)+"`") {
				t.Errorf("the paragraph does not name the header `%s: %s`", h.Key, h.Value)
			}
		}
	}
	if uri := strings.Replace(events.SchemaURI("X"), "X", "<type>", 1); !strings.Contains(sec, "`"+uri+"`") {
		t.Errorf("the paragraph does not name the schema URI form %s", uri)
	}
	_, rebuild, ok := strings.Cut(sec, "**Rebuilding the current state from the topic**")
	if !ok {
		t.Fatal("the paragraph does not say how to rebuild state from the topic")
	}
	for _, typ := range events.LearnedTypes {
		if !strings.Contains(rebuild, "`"+string(typ)+"`") {
			t.Errorf("the rebuild guidance does not say what to do with %s", typ)
		}
	}
}
