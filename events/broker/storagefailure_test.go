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
