package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	ctx := context.Background()
	dir := cleanLog(ctx, t)
	var b *Broker
	var err error
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

// A byte changed inside a segment of a log last stopped cleanly (a bad
// sector, a bit flip on a copy) leaves the file its size, so the size
// check passes, but kfake stops reading the partition at the batch whose
// CRC fails and serves the records before it as the whole log. Start now
// checks every batch's checksum in a log last stopped cleanly and refuses
// a mismatch, ErrLogDamaged naming the segment, the byte and the offset,
// at every start, leaving the file as it is. Before, the broker cut the
// file at that batch and started on the shorter log: audit said "this log
// is not the one the store was built from" and a replay built a shorter
// state without a word (a disk walkthrough: one byte of 10 MB changed, the
// partition read to offset 78 of 137).
func TestCorruptedLogIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := cleanLog(ctx, t)
	var b *Broker
	var err error
	seg := filepath.Join(dir, "partitions", string(events.TopicLearned)+"-0", "0.dat")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	at := fi.Size()/2 + 100 // inside a record's value
	if _, err := f.ReadAt(one, at); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0xff
	if _, err := f.WriteAt(one, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := 0; i < 2; i++ {
		b, err = Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0"})
		if err == nil {
			b.Close()
			t.Fatalf("start %d: a log with a corrupted batch started", i+1)
		}
		if !errors.Is(err, ErrLogDamaged) || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "does not match its checksum") || !strings.Contains(err.Error(), "restore the data directory") {
			t.Fatalf("start %d: %v, want ErrLogDamaged naming the segment, the offsets and what to do", i+1, err)
		}
		t.Log(err)
		if after, err := os.Stat(seg); err != nil || after.Size() != fi.Size() {
			t.Fatalf("start %d: the damaged segment changed: %v, want %d bytes left as they were", i+1, err, fi.Size())
		}
	}
}

// cleanLog is the directory of a log of 20 records of 500 bytes on
// partition 0 of chronicle.learned, stopped cleanly.
func cleanLog(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
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
	return dir
}

// A log a killed process left (no StoppedFile) whose segment ends in a
// torn write is cut back to its last whole batch by kfake, as Kafka's log
// recovery cuts it; Config.OnLogRepaired is now told of each such repair,
// so serve and broker warn, where the cut was silent before (left out by
// the disk walkthrough, 2026-12-04). The records before the torn end are
// kept; a clean log reports no repair.
func TestRepairOfAKilledLogIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := cleanLog(ctx, t)
	var repairs []string
	b, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", OnLogRepaired: func(r []string) { repairs = append(repairs, r...) }})
	if err != nil {
		t.Fatal(err)
	}
	b.close(false) // as a killed process leaves it: no StoppedFile
	if len(repairs) != 0 {
		t.Fatalf("a clean log reported repairs: %q", repairs)
	}
	seg := filepath.Join(dir, "partitions", string(events.TopicLearned)+"-0", "0.dat")
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(strings.Repeat("\x00\x01torn", 20))); err != nil { // 120 bytes: a batch header cut short
		t.Fatal(err)
	}
	f.Close()
	b, err = Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", OnLogRepaired: func(r []string) { repairs = append(repairs, r...) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(repairs) != 1 || !strings.Contains(repairs[0], string(events.TopicLearned)+"-0") || !strings.Contains(repairs[0], "truncating 120 corrupt bytes") {
		t.Fatalf("repairs = %q, want the cut of the 120 torn bytes of %s-0", repairs, events.TopicLearned)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{string(events.TopicLearned): {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < 20 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of the 20 records before the torn end: %v", got, err)
		}
		got += fs.NumRecords()
	}
}
