package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// An embedded broker that cannot write its log (a full disk, an I/O
// error, a volume remounted read-only) answers produce requests with
// UNKNOWN_SERVER_ERROR and nothing else; Broker.StorageFailure keeps the
// write's own error, naming the file, and a Producer given it as
// ProducerConfig.StorageFailure names that cause in its
// ErrNotAcknowledged (so POST /v1/events' 503, /healthz and the log line
// say what is wrong). Before, they said only "UNKNOWN_SERVER_ERROR: The
// server experienced an unexpected error" (a disk walkthrough: a 3 MB
// log volume filled under load). The write failure is simulated without
// root: a file stands where the partition's directory goes, so the
// broker's mkdir of it fails.
func TestBrokerStorageFailureIsNamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.StorageFailure(); err != nil {
		t.Fatalf("StorageFailure before any write = %v, want nil", err)
	}
	blocked := filepath.Join(dir, "partitions", string(events.TopicSessions)+"-0")
	if err := os.MkdirAll(filepath.Dir(blocked), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := events.NewProducer(events.ProducerConfig{Brokers: b.Addrs(), MaxAttempts: 2, PublishTimeout: 20 * time.Second, StorageFailure: b.StorageFailure})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	ev := mustSessionEvent(t)
	err = p.Publish(ctx, ev)
	if !errors.Is(err, events.ErrNotAcknowledged) {
		t.Fatalf("Publish = %v, want ErrNotAcknowledged", err)
	}
	// the record is not in the log (kfake truncates the segment back):
	// the outcome is known, a refusal (it said "may still be written")
	if !errors.Is(err, events.ErrRefused) {
		t.Fatalf("Publish = %v, want ErrRefused", err)
	}
	if !strings.Contains(err.Error(), "the broker could not write its log") || !strings.Contains(err.Error(), blocked) {
		t.Fatalf("Publish error does not name the log write's failure and %s:\n%v", blocked, err)
	}
	at, serr := b.StorageFailure()
	if serr == nil || !strings.Contains(serr.Error(), blocked) || at.Before(start) {
		t.Fatalf("StorageFailure = %v at %v, want the failed write of %s after %v", serr, at, blocked, start)
	}
	// room again: the next write is acknowledged, without a restart
	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, ev); err != nil {
		t.Fatalf("Publish after the log is writable again: %v", err)
	}
}

// mustSessionEvent is a valid coordination.session.started.v1.
func mustSessionEvent(t *testing.T) events.Envelope {
	t.Helper()
	var env events.Envelope
	raw := `{"specversion":"1.0","id":"disk-1","source":"disk-test","type":"coordination.session.started.v1","sessionid":"s-disk-1","time":"2026-12-04T20:00:00Z","data":{"original_task":"fill the disk","success_criteria":[]}}`
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// A clean stop whose final save fails (here a directory stands where
// the state file meta.json is first written, so the save cannot create
// it) leaves no StoppedFile: the mark would vouch for state files this
// stop did not write, and the next Start would compare the segments with
// a stale snapshot and skip the abort of dangling transactions. Before,
// Close wrote the mark whatever the save did (left out by the disk
// walkthrough, 2026-12-04). The next Start then takes the log as a killed
// process's, and serves it.
func TestFailedFinalSaveLeavesNoStoppedMark(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := events.NewProducer(events.ProducerConfig{Brokers: b.Addrs(), MaxAttempts: 2, PublishTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, mustSessionEvent(t)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	blocker := filepath.Join(dir, "meta.json.tmp")
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(dir, broker.StoppedFile)); err == nil {
		t.Fatalf("%s written after a final save that failed", broker.StoppedFile)
	}
	if _, serr := b.StorageFailure(); serr == nil || !strings.Contains(serr.Error(), "meta.json") {
		t.Fatalf("StorageFailure after the failed save = %v, want the save's error naming meta.json", serr)
	}
	if cerr := b.CloseError(); cerr == nil || !strings.Contains(cerr.Error(), "final save") || !strings.Contains(cerr.Error(), "meta.json") {
		t.Fatalf("CloseError = %v, want the final save's failure naming meta.json", cerr)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	b, err = broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("Start after a failed final save: %v", err)
	}
	b.Close()
	if cerr := b.CloseError(); cerr != nil {
		t.Fatalf("CloseError after a save that worked = %v", cerr)
	}
	if _, err := os.Stat(filepath.Join(dir, broker.StoppedFile)); err != nil {
		t.Fatalf("a clean stop with a working save must write %s: %v", broker.StoppedFile, err)
	}
}
