package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLearnedStreamShowsOnlyWhatTheEngineApplies writes to
// chronicle.learned, straight to Kafka as a raw producer may, a
// memory.created.v1 whose data breaks its schema (no title, an unknown
// member), a binary-mode memory.pruned.v1 without its required members,
// and a valid memory.created.v1 on the wrong partition for its key: the
// processors dead-letter all three, so the stream must not show them as
// learned. Before, it checked the type and the scope only and sent the
// first two (a subscriber's walkthrough: a JavaScript consumer read
// data.title as undefined from an event GET /v1/deadletters listed as
// refused). A valid event written the same way is shown.
func TestLearnedStreamShowsOnlyWhatTheEngineApplies(t *testing.T) {
	p, srv := setup(t) // 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := string(events.TopicLearned)
	valid := func(id, memory string) *kgo.Record {
		env, err := events.New(events.MemoryCreated, "test/raw", id, time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC), events.MemoryCreatedData{
			MemoryID: memory, Title: "Raw memory", Description: "Written straight to Kafka.", Outcome: "success",
			Source: "distilled", SourceSession: "s-1", Confidence: 0.8, Evidence: 1, RecordedEventID: "rec-" + id,
		})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		r, err := events.Record(&env)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	good := valid("raw-good", "m-good")
	misplaced := valid("raw-misplaced", "m-misplaced")
	key := string(misplaced.Key)
	misplaced.Partition = 1 - events.Partition(topic, key, 2)
	good.Partition = events.Partition(topic, string(good.Key), 2)
	forgedKey := "project:a/forged1"
	forged := &kgo.Record{Topic: topic, Partition: events.Partition(topic, forgedKey, 2), Key: []byte(forgedKey),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
		Value:   []byte(`{"specversion":"1.0","id":"forged-1","source":"urn:evil","type":"memory.created.v1","scope":"project:a","data":{"memory_id":"forged1","bogus":true}}`)}
	binaryKey := "project:a/forged4"
	binary := &kgo.Record{Topic: topic, Partition: events.Partition(topic, binaryKey, 2), Key: []byte(binaryKey), Value: []byte(`{"event_type":"a"}`),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/json")}, {Key: "ce_specversion", Value: []byte("1.0")},
			{Key: "ce_id", Value: []byte("forged-4")}, {Key: "ce_source", Value: []byte("urn:evil")}, {Key: "ce_type", Value: []byte("memory.pruned.v1")}, {Key: "ce_scope", Value: []byte("project:a")}}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, forged, binary, misplaced, good).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	resp, sr := openStream(t, sctx, srv.URL+"/v1/learned/stream?follow=false", "")
	defer resp.Body.Close()
	var ids []string
	for {
		ev, ok := sr.next()
		if !ok {
			break
		}
		if ev.Data == "" {
			continue // the last block: the position reached
		}
		ids = append(ids, ceOf(t, ev).ID)
	}
	if sctx.Err() != nil {
		t.Fatalf("follow=false did not end within 10 s (events so far %v)", ids)
	}
	if len(ids) != 1 || ids[0] != "raw-good" {
		t.Fatalf("the stream showed %v, want only raw-good (forged-1 and forged-4 break their schemas, raw-misplaced is on the wrong partition)", ids)
	}
}
