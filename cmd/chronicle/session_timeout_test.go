package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// serve refuses a --session-timeout its broker refuses, naming the flag,
// promptly (found by an operator's walkthrough: --session-timeout 3s was
// accepted and startup failed after 60 s with "processors did not
// subscribe within 60 s", naming no cause): with the embedded broker at
// once, outside its 6 s to 5 min; with --brokers at the group join's
// INVALID_SESSION_TIMEOUT.
func TestServeRefusesASessionTimeoutTheBrokerRefuses(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1)) // Kafka's group.min.session.timeout.ms, 6 s
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name   string
		args   []string
		within time.Duration
		want   []string
	}{
		{"embedded, below", []string{"--kafka-listen", "127.0.0.1:0", "--session-timeout", "3s"}, 10 * time.Second,
			[]string{"--session-timeout: 3s is below the embedded broker's minimum session timeout, 6s"}},
		{"embedded, above", []string{"--kafka-listen", "127.0.0.1:0", "--session-timeout", "6m"}, 10 * time.Second,
			[]string{"--session-timeout: 6m0s is above the embedded broker's maximum session timeout, 5m0s"}},
		{"--brokers, below", []string{"--brokers", c.ListenAddrs()[0], "--session-timeout", "3s"}, 30 * time.Second,
			[]string{"--session-timeout: ", "Config.SessionTimeout 3s", "INVALID_SESSION_TIMEOUT", "group.min.session.timeout.ms"}},
	} {
		args := append([]string{"serve", "--data", t.TempDir(), "--http", "127.0.0.1:0"}, tc.args...)
		cmd := exec.Command(binary, args...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t0 := time.Now()
		select {
		case err = <-done:
		case <-time.After(tc.within):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%s: still starting after %v, want a refusal naming --session-timeout:\n%s", tc.name, tc.within, out.String())
			continue
		}
		if err == nil {
			t.Errorf("%s: serve exited 0:\n%s", tc.name, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: after %v serve said\n%s\nwant %q", tc.name, time.Since(t0).Round(time.Millisecond), out.String(), w)
			}
		}
	}
}
