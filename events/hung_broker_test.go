package events_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker that takes connections and never answers (SIGSTOPped, or cut
// off behind a proxy) makes Publish fail at PublishTimeout saying so: no
// connection failed, so there is none to name, and the error said only
// "context deadline exceeded" (an operator's walkthrough, 2026-11-30).
func TestPublishToAHungBrokerSaysSo(t *testing.T) {
	var mu sync.Mutex
	var held []net.Conn // open, never answered
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	addr := fakeBroker(t, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, c)
	})
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{addr}, PublishTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env, err := events.New(events.MemoryFeedback, "test", "hung-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.Publish(context.Background(), env)
	if !errors.Is(err, events.ErrNotAcknowledged) || !strings.Contains(err.Error(), "no connection failed") {
		t.Fatalf("to a hung broker: %v, want ErrNotAcknowledged saying no connection failed", err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Fatalf("Publish returned after %v with a 2 s PublishTimeout", el)
	}
}

// A record the broker acknowledges after its Publish gave up (the
// idempotent client keeps an in-flight one) shows that writes work again:
// WriteFailure ends then, not at /healthz's 60 s window (an SRE's
// walkthrough, 2026-11-30: a readiness probe kept every member out for a
// minute after a 16 s broker outage). The failure names its cause as the
// caller's error does.
func TestLateAcknowledgementEndsWriteFailure(t *testing.T) {
	c := brokertest.FakeCluster(t)
	release := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.SleepControl(func() { <-release }) // the broker hangs on this produce, then handles it
		return nil, nil, false
	})
	p, err := events.NewProducer(events.ProducerConfig{Brokers: c.ListenAddrs(), PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env, err := events.New(events.MemoryFeedback, "test", "late-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	perr := p.Publish(context.Background(), env)
	if !errors.Is(perr, events.ErrNotAcknowledged) {
		t.Fatalf("Publish with the produce held: %v, want ErrNotAcknowledged", perr)
	}
	if f := p.WriteFailure(); f.Err == nil || f.Err.Error() != perr.Error() {
		t.Fatalf("WriteFailure %v, want the caller's error %v", f.Err, perr)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for p.WriteFailure().Err != nil {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the broker answered, WriteFailure still %v", p.WriteFailure().Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A producer whose broker refuses connections says so on every Publish:
// only a failure during the call was named, so a call during which the
// client, backing off, tried no connection said "no connection failed:
// the broker did not answer …, so it is hung" of a broker that was down
// (a Go-package walkthrough: one Publish in four with a 3 s
// PublishTimeout, more with 1 s).
func TestPublishToARefusingBrokerNamesTheRefusalEveryTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every connection is refused
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{addr}, PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 6 {
		env, err := events.New(events.SessionCompleted, "test/refused", fmt.Sprint("e", i), time.Time{}, events.SessionCompletedData{Output: "o", Outcome: events.OutcomeSuccess})
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID = "s1"
		err = p.Publish(context.Background(), env)
		if !errors.Is(err, events.ErrNotAcknowledged) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "hung") {
			t.Errorf("publish %d: %v, want ErrNotAcknowledged naming the refused connection, not a hung broker", i, err)
		}
	}
}
