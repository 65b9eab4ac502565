package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// TestKilledTransactionStaysAborted: a process killed inside a Kafka
// transaction (a worker's output, written and not yet committed) leaves a
// batch without a marker. Live, the restarted broker skips it; the next
// load of the same log must skip it too. Before, the embedded broker
// aborted it in memory only, so once the same transactional id committed
// its next transaction, a later load (a restart, `replay`, `audit`) read
// the dangling record as committed: `audit` failed after kill -9 (a crash
// walkthrough, 2026-11-30). Each step runs in its own process, killed with
// SIGKILL; the last load is this test's.
func TestKilledTransactionStaysAborted(t *testing.T) {
	dir := t.TempDir()
	// the dangling transaction: A produced, then kill -9
	killWhenReady(t, dir, "dangle")
	// a restart that commits the same transactional id's next
	// transaction, then kill -9 (no clean stop: the next load replays
	// the whole log)
	killWhenReady(t, dir, "commit")
	if _, err := os.Stat(dir + "/" + broker.StoppedFile); err == nil {
		t.Fatalf("%s after kill -9", broker.StoppedFile)
	}
	b, err := broker.Start(context.Background(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	got := broker.CommittedValues(t, b.Addrs())
	b.Close()
	if !slices.Equal(got, []string{"B"}) {
		t.Fatalf("read_committed after the reload: %q, want only the committed [B] (A's transaction was killed)", got)
	}
	if _, err := os.Stat(dir + "/" + broker.StoppedFile); err != nil {
		t.Fatalf("%s after Close: %v", broker.StoppedFile, err)
	}
	// a clean restart reads the same
	b, err = broker.Start(context.Background(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := broker.CommittedValues(t, b.Addrs()); !slices.Equal(got, []string{"B"}) {
		t.Fatalf("read_committed after a clean restart: %q, want [B]", got)
	}
}

// killWhenReady runs TestDanglingHelperProcess in mode on dir, waits for
// its "ready" line and kills it with SIGKILL.
func killWhenReady(t *testing.T, dir, mode string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDanglingHelperProcess$")
	cmd.Env = append(os.Environ(), "CHRONICLE_DANGLING_HELPER="+mode, "CHRONICLE_DANGLING_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "ready") || strings.HasPrefix(l, "error") {
				ready <- l
				return
			}
		}
		ready <- "exited"
	}()
	select {
	case l := <-ready:
		if l != "ready" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper %s: %s", mode, l)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper %s: not ready within 60 s", mode)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestDanglingHelperProcess is the killed process of
// TestKilledTransactionStaysAborted (it does nothing otherwise): mode
// dangle produces A in a transaction it never ends, commit produces B in
// a committed transaction of the same transactional id; then it prints
// "ready" and waits to be killed.
func TestDanglingHelperProcess(t *testing.T) {
	mode, dir := os.Getenv("CHRONICLE_DANGLING_HELPER"), os.Getenv("CHRONICLE_DANGLING_DIR")
	if mode == "" {
		t.Skip("the helper process of TestKilledTransactionStaysAborted")
	}
	fail := func(err error) {
		fmt.Printf("error: %v\n", err)
		os.Exit(1)
	}
	ctx := context.Background()
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		fail(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID("chronicle.test/dangling"),
		kgo.DefaultProduceTopic(string(events.TopicLearned)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		fail(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		fail(err)
	}
	value := map[string]string{"dangle": "A", "commit": "B"}[mode]
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value), Partition: 0}).FirstErr(); err != nil {
		fail(err)
	}
	if mode == "commit" {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			fail(err)
		}
	}
	fmt.Println("ready")
	select {} // killed
}
