package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
)

// A log cut short after a clean stop (a segment truncated, as a damaged
// disk or a bad copy leaves it) is refused at Start with ErrLogDamaged,
// naming the file and both sizes, and again at the next Start; before,
// kfake replayed what was left without a word, serve then said the
// store's offsets were beyond "another log" or "a copied directory", and
// a replay built a shorter state (an SRE's walkthrough, 2026-12-03). A
// clean log starts.
func TestTruncatedLogIsRefused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(string(events.TopicLearned)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("x", 500)), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b.Close()
	// a clean log starts again
	if b, err = Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatalf("a clean log: %v", err)
	}
	b.Close()
	seg := filepath.Join(dir, "partitions", string(events.TopicLearned)+"-0", "0.dat")
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		b, err = Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"})
		if err == nil {
			b.Close()
			t.Fatalf("start %d: a truncated log started", i+1)
		}
		if !errors.Is(err, ErrLogDamaged) || !strings.Contains(err.Error(), "0.dat") || !strings.Contains(err.Error(), "restore the data directory") {
			t.Fatalf("start %d: %v, want ErrLogDamaged naming the segment and what to do", i+1, err)
		}
	}
}
