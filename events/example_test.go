package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// New builds an event; the session it belongs to is the envelope's
// SessionID, which the caller sets. Its JSON form is the CloudEvents JSON
// format.
func ExampleNew() {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	env, err := events.New(events.SessionCompleted, "agent/demo", "s1-done", at,
		events.SessionCompletedData{Output: "refunded", Outcome: events.OutcomeSuccess})
	if err != nil {
		fmt.Println(err)
		return
	}
	env.SessionID = "s1"
	b, _ := json.MarshalIndent(env, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "specversion": "1.0",
	//   "id": "s1-done",
	//   "source": "agent/demo",
	//   "type": "coordination.session.completed.v1",
	//   "time": "2026-12-04T12:00:00Z",
	//   "datacontenttype": "application/json",
	//   "dataschema": "urn:chronicle:schema:coordination.session.completed.v1",
	//   "sessionid": "s1",
	//   "data": {
	//     "output": "refunded",
	//     "outcome": "success"
	//   }
	// }
}

// A session as an agent runtime publishes it: its start with a success
// criterion, one tool call and its completion, all with the session's id
// in SessionID. Publish returns once the broker acknowledged all three; the
// sessions processor then evaluates the session (evaluation.completed.v1).
// The embedded broker (package broker) stands in for Kafka here.
func ExampleProducer_Publish() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	p, err := events.NewProducer(events.ProducerConfig{Brokers: b.Addrs(), PublishTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	start, _ := events.New(events.SessionStarted, "agent/demo", "s1-start", at, events.SessionStartedData{
		OriginalTask: "refund order 42",
		SuccessCriteria: []events.Criterion{{ID: "refund", Description: "the order is refunded", Weight: 1,
			Check: events.Check{Kind: events.CheckToolCall, Name: "refund", Arguments: json.RawMessage(`{"order":42}`)}}},
	})
	call, _ := events.New(events.WorkflowTaskCompleted, "agent/demo", "s1-call-1", at.Add(time.Second), events.TaskCompletedData{
		WorkflowID: "s1", TaskID: "call-1", ToolID: "refund", Inputs: json.RawMessage(`{"order":42}`), Success: true, DurationMS: 120})
	done, _ := events.New(events.SessionCompleted, "agent/demo", "s1-done", at.Add(2*time.Second),
		events.SessionCompletedData{Output: "refunded", Outcome: events.OutcomeSuccess})
	session := []events.Envelope{start, call, done}
	for i := range session {
		session[i].SessionID = "s1"
	}
	if err := p.Publish(ctx, session...); err != nil {
		// errors.Is(err, events.ErrNotAcknowledged): the outcome is
		// unknown; publish the same events again (same ids), which
		// consumers drop as duplicates if they were written.
		fmt.Println(err)
		return
	}
	key, err := events.Key(&session[2])
	fmt.Println("acknowledged; record key", key, err)
	// Output:
	// acknowledged; record key org:default/s1 <nil>
}

// Publish validates every event before it writes any: a refusal is a
// *ValidationError naming the event's index and the JSON pointer of the
// member, and nothing was written. No broker is asked, so this needs none.
func ExampleValidationError() {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:9"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ok, _ := events.New(events.SessionCompleted, "agent/demo", "s1-done", time.Time{},
		events.SessionCompletedData{Output: "refunded", Outcome: events.OutcomeSuccess})
	ok.SessionID = "s1"
	bad, _ := events.New(events.SessionCompleted, "agent/demo", "s2-done", time.Time{},
		events.SessionCompletedData{Output: "?", Outcome: "maybe"})
	bad.SessionID = "s2"

	err = p.Publish(context.Background(), ok, bad)
	var ve *events.ValidationError
	if errors.As(err, &ve) {
		fmt.Printf("event %d refused at %s\n", ve.Index, ve.Pointer)
	}
	// Output:
	// event 1 refused at /data/outcome
}

// A derived type (written by Chronicle's processors) is refused on every
// producer path with an error that errors.Is finds ErrDerivedType in.
func ExampleErrDerivedType() {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:9"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ev, _ := events.New(events.EvaluationCompleted, "agent/demo", "e1", time.Time{}, events.EvaluationData{SessionID: "s1"})
	ev.SessionID = "s1"
	err = p.Publish(context.Background(), ev)
	fmt.Println(errors.Is(err, events.ErrDerivedType))
	// Output:
	// true
}
