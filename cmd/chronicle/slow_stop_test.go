package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// slowStopAfter is how long TestSlowStop lets a stopped serve run before
// it sends SIGQUIT (a goroutine dump into the instance's log) and counts
// the stop as slow.
const slowStopAfter = 15 * time.Second

// TestSlowStop repeats the operator's measurement of 3 `serve` instances
// on a separate broker (session timeout 2 s) stopped with SIGTERM and
// started again, one after another (3 s apart) or together, so that the
// instances still running rebalance while the others stop. Each stop is
// timed; an instance not gone 15 s after its SIGTERM gets SIGQUIT and its
// log (with the goroutine dump) is kept in $TMPDIR. Only with
// CHRONICLE_SLOW_STOP=1; CHRONICLE_SLOW_STOP_ROUNDS (default 8),
// CHRONICLE_SLOW_STOP_SESSIONS (tau-bench sessions imported, default 88:
// about 3,000 events) and CHRONICLE_SLOW_STOP_PORT (the first of three HTTP
// ports, default 20100) vary it. It fails if any stop took 15 s or more.
func TestSlowStop(t *testing.T) {
	if os.Getenv("CHRONICLE_SLOW_STOP") == "" {
		t.Skip("set CHRONICLE_SLOW_STOP=1: runs a broker and 3 serve processes through many restarts")
	}
	rounds := envInt("CHRONICLE_SLOW_STOP_ROUNDS", 8)
	sessions := envInt("CHRONICLE_SLOW_STOP_SESSIONS", 88)
	port := envInt("CHRONICLE_SLOW_STOP_PORT", 20100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &cluster{t: t, dir: t.TempDir()}
	c.startBroker()
	var ms []*member
	for i := 0; i < 3; i++ {
		m := c.newMember()
		m.http = "127.0.0.1:" + strconv.Itoa(port+i)
		ms = append(ms, m)
	}
	t.Cleanup(func() {
		for _, m := range ms {
			if m.cmd != nil && m.alive.Load() {
				_ = m.cmd.Process.Kill()
				<-m.done
			}
		}
	})
	// the import, with the first instance up, then the others
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: []string{c.brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	c.start(ms[0])
	total := 0
	for i := 0; i < sessions; i++ {
		r := recs[i%len(recs)]
		r.Trial += 100 * (i / len(recs))
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		total += len(envs)
	}
	t.Logf("imported %d events (%d sessions)", total, sessions)
	c.start(ms[1])
	c.start(ms[2])

	var times []time.Duration
	var slow []string
	for round := 0; round < rounds; round++ {
		stagger := round%2 == 0
		upStagger := round%4 < 2
		// a little more to process during the rebalances
		for i := 0; i < 4; i++ {
			r := recs[(round*4+i)%len(recs)]
			r.Trial += 1000 + 100*round
			envs, _ := taubench.Events(r)
			_ = prod.Publish(ctx, envs...)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, m := range ms {
			if stagger && i > 0 {
				time.Sleep(3 * time.Second)
			}
			wg.Add(1)
			go func(m *member) {
				defer wg.Done()
				d, kept := stopTimed(t, m, round)
				mu.Lock()
				defer mu.Unlock()
				times = append(times, d)
				if kept != "" {
					slow = append(slow, fmt.Sprintf("round %d %s: %s", round, m.name, kept))
				}
				t.Logf("round %d (stop %s): %s exited %s after SIGTERM", round, map[bool]string{true: "3 s apart", false: "together"}[stagger], m.name, d.Round(time.Millisecond))
			}(m)
		}
		wg.Wait()
		for i, m := range ms {
			if upStagger && i > 0 {
				time.Sleep(3 * time.Second)
			}
			launch(t, c, m)
		}
		for _, m := range ms {
			if err := waitUp(m, 120*time.Second); err != nil {
				t.Fatalf("round %d: %v; log:\n%s", round, err, tail(m.log))
			}
		}
		// and a few seconds of running, or none: a stop during the
		// start's rebalances too
		time.Sleep(time.Duration(round%3) * 2 * time.Second)
	}
	slices.Sort(times)
	t.Logf("%d stops: min %s, median %s, max %s", len(times), times[0].Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	if len(slow) > 0 {
		t.Errorf("%d of %d stops took %s or more; logs with goroutine dumps: %v", len(slow), len(times), slowStopAfter, slow)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// stopTimed sends SIGTERM to m and waits for its exit; past slowStopAfter
// it sends SIGQUIT and keeps m's log (with the goroutine dump), whose path
// it returns.
func stopTimed(t *testing.T, m *member, round int) (time.Duration, string) {
	t0 := time.Now()
	m.alive.Store(false)
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Error(err)
	}
	select {
	case <-m.done:
		return time.Since(t0), ""
	case <-time.After(slowStopAfter):
	}
	_ = m.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	kept := filepath.Join(os.TempDir(), fmt.Sprintf("chronicle-slowstop-%s-r%d-%d.log", m.name, round, time.Now().Unix()))
	b, _ := os.ReadFile(m.log)
	_ = os.WriteFile(kept, b, 0o644)
	return time.Since(t0), kept
}

// launch starts `serve` for m without waiting for it (cluster.start
// waits).
func launch(t *testing.T, c *cluster, m *member) {
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	m.cmd = exec.Command(binary, "serve", "--data", m.data, "--brokers", c.brokers, "--partitions", strconv.Itoa(faultPartitions),
		"--http", m.http, "--session-timeout", faultSessionTimeout.String())
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	m.alive.Store(true)
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(m.cmd, m.done)
}

// waitUp waits until m's API answers other than "starting".
func waitUp(m *member, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + m.http + "/healthz")
		if err == nil {
			var h struct{ Status string }
			_ = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Status != "starting" {
				return nil
			}
		}
		select {
		case <-m.done:
			return fmt.Errorf("%s exited at start", m.name)
		default:
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: no API within %s", m.name, within)
}
