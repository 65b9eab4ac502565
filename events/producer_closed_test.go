package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A nil extension is the attribute left out, as a JSON null is over HTTP:
// the record carries no "myext": null, so the processors' parse takes the
// event (before, Publish wrote the null and the processors dead-lettered
// it: a Go embedder's walkthrough). An extension that shadows a context
// attribute is refused naming it, not /data.
func TestNilExtensionIsLeftOut(t *testing.T) {
	e, err := events.New(events.MinuteRecorded, "urn:agent:ext", "n1", time.Unix(1700000000, 0), events.MinuteData{EventType: "message", Actor: "u", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	e.SessionID, e.Scope = "ext", "project:ext"
	e.Extensions = map[string]any{"myext": nil, "kept": "v"}
	var ch events.Checker
	r, err := ch.Check(&e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatal(err)
	}
	if _, has := m["myext"]; has || m["kept"] != "v" {
		t.Fatalf("record %s: want myext left out and kept kept", r.Value)
	}
	if _, err := events.FromRecord(r); err != nil {
		t.Fatalf("the processors' parse refuses the record: %v", err)
	}
	e.Extensions = map[string]any{"scope": "project:other"}
	_, err = ch.Check(&e)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/scope" {
		t.Fatalf("an extension named scope: %v, want a refusal at /scope", err)
	}
}

// Publish after Close returns ErrProducerClosed at once and leaves
// WriteFailure alone: nothing was sent (before, about 1.6 s of retries
// and ErrNotAcknowledged, "client closed", which /healthz read as the
// broker refusing writes: a Go embedder's walkthrough).
func TestPublishAfterClose(t *testing.T) {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	e, _ := events.New(events.MinuteRecorded, "urn:agent:c", "c1", time.Unix(1700000000, 0), events.MinuteData{EventType: "message", Actor: "u", Data: []byte(`{}`)})
	e.SessionID = "c"
	start := time.Now()
	err = p.Publish(context.Background(), e)
	if !errors.Is(err, events.ErrProducerClosed) || errors.Is(err, events.ErrNotAcknowledged) {
		t.Fatalf("Publish after Close: %v, want ErrProducerClosed", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Publish after Close took %v", d)
	}
	if f := p.WriteFailure(); f.Err != nil {
		t.Errorf("WriteFailure after a Publish on a closed producer: %v", f.Err)
	}
	p.Close() // twice is fine
}

// PublishDerived's refusal names the event's position, as Publish's does
// (its Index was -1 for the second of two events: a Go embedder's
// walkthrough); nothing is sent, so no broker is needed.
func TestPublishDerivedRefusalHasItsIndex(t *testing.T) {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ok, _ := events.New(events.MinuteRecorded, "urn:agent:d", "d1", time.Unix(1700000000, 0), events.MinuteData{EventType: "message", Actor: "u", Data: []byte(`{}`)})
	ok.SessionID = "d"
	bad := ok
	bad.ID, bad.Data = "d2", []byte(`{"actor":"u"}`)
	err = p.PublishDerived(context.Background(), ok, bad)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Index != 1 {
		t.Fatalf("%v, want a ValidationError with Index 1", err)
	}
}
