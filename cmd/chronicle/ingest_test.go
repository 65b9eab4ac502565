package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ingestBroker is a kfake broker on a free port, every topic created, and a
// function counting the records written to all of them.
func ingestBroker(t *testing.T) (addr string, written func() int64) {
	t.Helper()
	topics := brokertest.TopicNames()
	addr = brokertest.FakeCluster(t).ListenAddrs()[0]
	return addr, func() int64 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
}

// memoryLine is a producer's memory.recorded.v1 of id and content, one line.
func memoryLine(id, content string) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"ingest-test","type":"memory.recorded.v1","scope":"project:a","data":{"memory_id":%q,"title":"t","description":"d","content":%q,"outcome":"success","source":"explicit"}}`, id, id, content)
}

// ingest checks every line as the producer would before it produces any
// (found by an operator's walkthrough): a 1 MiB event on line 601 was
// refused by Publish after the first 500 lines were written, and a line
// reusing an earlier line's id with other content was written when the
// two fell in different batches of 500 (then dead-lettered as a
// conflicting duplicate). Both are refused naming the file, the line, the
// pointer and the reason, and nothing is written; the same event again is
// a plain duplicate, accepted.
func TestIngestChecksEveryLineBeforeProducing(t *testing.T) {
	addr, written := ingestBroker(t)
	dir := t.TempDir()
	valid := make([]string, 600)
	for i := range valid {
		valid[i] = memoryLine(fmt.Sprintf("m%d", i+1), "c")
	}
	for _, c := range []struct {
		name  string
		extra []string
		want  []string
	}{
		{"too large", []string{memoryLine("big", strings.Repeat("x", 1<<20))}, []string{"too large.jsonl:601: /data/content: ", "of them in /data/content", "above the 983040-byte limit", "nothing was ingested"}},
		{"reused id", []string{memoryLine("m5", "other")}, []string{"reused id.jsonl:601: /id: ", `id "m5"`, "line 5 with other content"}},
		{"reused in batch", []string{memoryLine("m601", "a"), memoryLine("m601", "b")}, []string{"reused in batch.jsonl:602: /id: ", "line 601 with other content"}},
	} {
		file := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(file, []byte(strings.Join(append(valid, c.extra...), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := written()
		out, err := exec.Command(binary, "ingest", file, "--brokers", addr).CombinedOutput()
		if err == nil {
			t.Errorf("%s: ingest succeeded:\n%s", c.name, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: ingest said\n%s\nwant %q", c.name, out, w)
			}
		}
		if n := written() - before; n != 0 {
			t.Errorf("%s: %d records written, want none", c.name, n)
		}
	}
	file := filepath.Join(dir, "duplicate.jsonl")
	if err := os.WriteFile(file, []byte(memoryLine("d1", "c")+"\n"+memoryLine("d2", "c")+"\n"+memoryLine("d1", "c")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := written()
	out, err := exec.Command(binary, "ingest", file, "--brokers", addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ingested 3 events") {
		t.Fatalf("the same event twice: %v\n%s\nwant it ingested (a plain duplicate)", err, out)
	}
	if n := written() - before; n != 3 {
		t.Fatalf("%d records written, want 3", n)
	}
	// a byte order mark at the start of the file is not part of the
	// first event (it was refused as not JSON: a walkthrough); anywhere
	// else it is no JSON and is refused naming the line
	bom := filepath.Join(dir, "bom.jsonl")
	if err := os.WriteFile(bom, []byte("\uFEFF"+memoryLine("b1", "c")+"\n"+memoryLine("b2", "c")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = written()
	if out, err := exec.Command(binary, "ingest", bom, "--brokers", addr).CombinedOutput(); err != nil || !strings.Contains(string(out), "ingested 2 events") || written()-before != 2 {
		t.Fatalf("a file starting with a byte order mark: %v\n%s\nwant both events ingested", err, out)
	}
	if err := os.WriteFile(bom, []byte(memoryLine("b3", "c")+"\n\uFEFF"+memoryLine("b4", "c")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "ingest", bom, "--brokers", addr).CombinedOutput(); err == nil || !strings.Contains(string(out), "bom.jsonl:2: ") {
		t.Fatalf("a byte order mark on line 2: %v\n%s\nwant a refusal naming bom.jsonl:2", err, out)
	}
	if out, err := exec.Command(binary, "ingest").CombinedOutput(); err == nil || !strings.Contains(string(out), "ingest takes one FILE") {
		t.Fatalf("ingest without FILE: %v\n%s\nwant the argument named", err, out)
	}
}

// ingest - reads stdin, as import taubench - does; it failed with "open -:
// no such file or directory" (found by an operator's walkthrough). Its
// errors name stdin and the line.
func TestIngestReadsStdin(t *testing.T) {
	addr, written := ingestBroker(t)
	cmd := exec.Command(binary, "ingest", "-", "--brokers", addr)
	cmd.Stdin = strings.NewReader(memoryLine("s1", "c") + "\n" + memoryLine("s2", "c") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ingested 2 events") {
		t.Fatalf("ingest -: %v\n%s\nwant 2 events ingested", err, out)
	}
	if n := written(); n != 2 {
		t.Fatalf("%d records written, want 2", n)
	}
	cmd = exec.Command(binary, "ingest", "-", "--brokers", addr)
	cmd.Stdin = strings.NewReader(memoryLine("s3", "c") + "\n{}\n")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stdin:2: ") {
		t.Fatalf("ingest - of a bad second line: %v\n%s\nwant a failure naming stdin:2", err, out)
	}
}
