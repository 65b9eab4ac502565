package events_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A broker that takes connections and never answers (SIGSTOPped, or cut
// off behind a proxy) makes Publish fail at PublishTimeout saying so: no
// connection failed, so there is none to name, and the error said only
// "context deadline exceeded" (an operator's walkthrough, 2026-11-30).
func TestPublishToAHungBrokerSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{ln.Addr().String()}, PublishTimeout: 2 * time.Second})
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
