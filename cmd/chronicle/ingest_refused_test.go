package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
)

// A batch of ingest the broker refuses ends it saying which events, that
// those before were acknowledged, that the refused ones were not written,
// and that running it again is safe. It said only "events 1-1: …".
func TestIngestFailureSaysWhatWasWritten(t *testing.T) {
	c := brokertest.FakeCluster(t)
	var produces atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if produces.Add(1) == 1 {
			return nil, nil, false // the first batch is written
		}
		return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), kerr.TopicAuthorizationFailed.Code), nil, true
	})
	p, err := events.NewProducer(events.ProducerConfig{Brokers: c.ListenAddrs(), PublishTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var recs []*kgo.Record
	var ck events.Checker
	for _, id := range []string{"i1", "i2", "i3"} {
		env, err := events.New(events.MemoryFeedback, "ingest-test", id, time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := ck.Check(&env)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	err = publishBatches(context.Background(), p, recs, 1, newBar(len(recs), "ingest", "events"))
	if err == nil {
		t.Fatal("publishBatches: nil, want the refused batch's error")
	}
	for _, want := range []string{"events 1-1 of 3", "TOPIC_AUTHORIZATION_FAILED", "the broker refused them, so they were not written", "the 1 before them were acknowledged", "running the command again is safe"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("publishBatches: %v\nwant %q", err, want)
		}
	}
}
