package broker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// TestLogInUseIsRefused: a second embedded broker on a log another one
// runs on — in this process or in another (a CLI command given --data of a
// running service) — is refused, names the directory, and writes nothing;
// once the first is closed the log opens with every acknowledged record.
// Before the lock, a second broker rewrote the log's metadata under the
// first and an acknowledged event was lost.
func TestLogInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := broker.Start(context.Background(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, first.Addrs(), events.TopicSessions, 0, 3)
	before := metaTimes(t, dir)

	// the same process, the directory spelled another way
	_, err = broker.Start(context.Background(), broker.Config{DataDir: dir + "/./", Listen: "127.0.0.1:0"})
	if !errors.Is(err, broker.ErrLogInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second broker in this process: %v; want ErrLogInUse naming %s", err, dir)
	}
	// another process
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLogLockHelperProcess$")
	cmd.Env = append(os.Environ(), "CHRONICLE_LOCK_HELPER_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), broker.ErrLogInUse.Error()) || !strings.Contains(string(out), dir) {
		t.Fatalf("second broker in another process: %v\n%s\nwant a failure with ErrLogInUse naming %s", err, out, dir)
	}
	if after := metaTimes(t, dir); after != before {
		t.Fatalf("a refused broker touched the log's files: %s before, %s after", before, after)
	}

	first.Close()
	again, err := broker.Start(context.Background(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	defer again.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(again.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	if n != 3 {
		t.Fatalf("after reopening: %d records in %s, want the 3 acknowledged", n, events.TopicSessions)
	}
}

// TestLogLockHelperProcess is TestLogInUseIsRefused's other process: it
// starts a broker on $CHRONICLE_LOCK_HELPER_DIR and prints the error.
func TestLogLockHelperProcess(t *testing.T) {
	dir := os.Getenv("CHRONICLE_LOCK_HELPER_DIR")
	if dir == "" {
		t.Skip("run by TestLogInUseIsRefused")
	}
	b, err := broker.Start(context.Background(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

// metaTimes lists the modification times of the log directory's files
// (LockFile aside: taking the lock, or failing to, recreates it empty).
func metaTimes(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == broker.LockFile {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name() + "@" + info.ModTime().Format(time.RFC3339Nano) + " ")
	}
	return b.String()
}
