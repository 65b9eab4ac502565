package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kgo"
)

// freePort returns a loopback address (host:port) no listener holds now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startBrokerProcess runs `chronicle broker` as a child and waits until it
// listens.
func startBrokerProcess(t *testing.T, data, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "broker", "--data", data, "--kafka-listen", addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != addr {
		_ = cmd.Process.Kill()
		t.Fatalf("broker did not come up on %s: %q %v", addr, line, err)
	}
	return cmd
}

// TestBrokerRestartLosesNoAcknowledgedEvent SIGKILLs the broker process
// while a producer is sending, restarts it on the same port and data, and
// checks that every event whose Publish returned nil is in the log.
func TestBrokerRestartLosesNoAcknowledgedEvent(t *testing.T) {
	data := t.TempDir()
	addr := freePort(t)
	brk := startBrokerProcess(t, data, addr)
	defer func() { _ = brk.Process.Kill(); _ = brk.Wait() }()

	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{addr}, MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond, DeliveryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	acked := map[string]bool{}
	failed := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			env, err := events.New(events.MemoryFeedback, "test/restart", fmt.Sprintf("fb-%05d", i), time.Unix(1700000000, 0),
				events.MemoryFeedbackData{MemoryID: fmt.Sprintf("m%d", i%7), Signal: "task_completion", Positive: i%2 == 0})
			if err != nil {
				t.Error(err)
				return
			}
			if err := p.Publish(ctx, env); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				continue
			}
			mu.Lock()
			acked[env.ID] = true
			mu.Unlock()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	for count() < 300 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := brk.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = brk.Wait()
	before := count()
	time.Sleep(500 * time.Millisecond)
	brk = startBrokerProcess(t, data, addr)
	deadline := time.Now().Add(60 * time.Second)
	for count() < before+300 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < before+300 {
		t.Fatalf("producer did not recover after the restart: %d acknowledged before, %d after", before, len(acked))
	}
	t.Logf("%d acknowledged (%d before the kill), %d publishes failed while the broker was down", len(acked), before, failed)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(string(events.TopicMemories)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for missing := len(acked); missing > 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged events missing from the log after the broker restart", missing)
		}
		fs.EachRecord(func(r *kgo.Record) {
			env, err := events.FromRecord(r)
			if err != nil {
				t.Errorf("offset %d: %v", r.Offset, err)
				return
			}
			if acked[env.ID] && !seen[env.ID] {
				seen[env.ID] = true
				missing--
			}
		})
	}
}
