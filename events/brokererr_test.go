package events_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestExplainBrokerErrorOfAClosingBroker: a broker that accepts a
// connection and closes it as soon as a request is sent (a broker being
// killed or restarted) makes franz-go guess "is SASL missing?";
// ExplainBrokerError says the broker may be down or restarting instead,
// and keeps the error for errors.As.
func TestExplainBrokerErrorOfAClosingBroker(t *testing.T) {
	addr := fakeBroker(t, func(c net.Conn) {
		// the whole request is read: then the broker is gone
		size := make([]byte, 4)
		if _, err := io.ReadFull(c, size); err == nil {
			_, _ = io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(size)))
		}
		_ = c.Close()
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).Metadata(ctx)
	var fe *kgo.ErrFirstReadEOF
	if !errors.As(err, &fe) {
		t.Skipf("franz-go did not answer ErrFirstReadEOF here: %v", err)
	}
	got := events.ExplainBrokerError(err)
	if msg := got.Error(); strings.Contains(msg, "SASL is required") || !strings.Contains(msg, events.BrokerClosedConnection) {
		t.Fatalf("explained: %s (franz-go: %v)", msg, err)
	}
	if !errors.As(got, &fe) || !errors.Is(got, err) {
		t.Fatalf("the explained error lost its cause: %#v", got)
	}
	if other := errors.New("x"); events.ExplainBrokerError(other) != other || events.ExplainBrokerError(nil) != nil {
		t.Fatal("other errors are changed")
	}
}

// fakeBroker listens on a loopback port for the test's duration and hands
// each connection to serve (in its accept loop, one at a time); it
// returns the address.
func fakeBroker(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	return ln.Addr().String()
}
