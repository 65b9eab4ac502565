package main

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// A network error of a command given --brokers names the flag and its
// value (replay said only "replay: end offsets: read tcp …: i/o timeout":
// a new user's walkthrough, 2026-11-30); another error, or a command
// without the flag given, is left as it is.
func TestNamedBrokers(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().String("brokers", "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, netErr := conn.Read(make([]byte, 1)) // an i/o timeout, a net.Error
	other := errors.New("replay: --until: offset beyond the end")
	if got := namedBrokers(cmd, netErr); got != netErr {
		t.Fatalf("--brokers not given: %v", got)
	}
	_ = cmd.Flags().Set("brokers", "127.0.0.1:36901")
	if got := namedBrokers(cmd, netErr); !errors.Is(got, netErr) || !strings.HasPrefix(got.Error(), "--brokers 127.0.0.1:36901: ") {
		t.Fatalf("a network error: %v", got)
	}
	if got := namedBrokers(cmd, other); got != other {
		t.Fatalf("another error: %v", got)
	}
}
