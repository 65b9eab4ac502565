package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// logOfOneSession runs the pipeline on a new data directory, imports one
// tau-bench session and returns the directory with the pipeline still
// running (stop closes it).
// sampleRecords is the embedded tau-bench sample, decoded once for the
// package's tests (taubench.SampleRecords decodes it anew, about 1.3 s
// under -race, and helpers here ran it per test). Shared: read the
// records, never change them (a copy of a Record is safe to change, its
// slices are not).
var sampleRecords = sync.OnceValues(taubench.SampleRecords)

func logOfOneSession(t *testing.T) (data string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data = t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0", Partitions: 1, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Producer.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	closed := false
	stop = func() {
		if !closed {
			closed = true
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return data, stop
}

// TestCommandsRefuseALiveLog: a CLI command given the --data of a running
// service (here a pipeline in the test process; the command is another
// process) fails naming the log in use and tells to use --brokers, instead
// of starting a second broker on the live log (which lost an acknowledged
// event in a new user's walkthrough).
func TestCommandsRefuseALiveLog(t *testing.T) {
	data, stop := logOfOneSession(t)
	for _, args := range [][]string{
		{"deadletter", "list", "--data", data},
		{"replay", "--data", data, "--into", filepath.Join(t.TempDir(), "r")},
	} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "in use by another chronicle process") || !strings.Contains(string(out), "--brokers") {
			t.Errorf("%v on a live directory: %v\n%s\nwant a refusal naming the log in use", args, err, out)
		}
	}
	stop()
	if out, err := exec.Command(binary, "deadletter", "list", "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("deadletter list on the stopped directory: %v\n%s", err, out)
	}
}

// TestReplayRefusedLeavesNoStore: a replay refused before it read a record
// (an --until naming no partition, or an offset past the end) leaves no
// projections behind, so digest cannot mistake an empty store for a state
// and the corrected command runs into the same directory.
func TestReplayRefusedLeavesNoStore(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	into := filepath.Join(t.TempDir(), "asof")
	// an empty projections directory made beforehand is left empty
	// again (a half-built store there refused the corrected command: an
	// analyst's walkthrough)
	emptied := filepath.Join(t.TempDir(), "made")
	if err := os.MkdirAll(pipeline.ProjectionsDir(emptied), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", emptied, "--until", "chronicle.sessions:0:100000").CombinedOutput(); err == nil {
		t.Fatalf("replay --until past the end: %s", out)
	}
	if entries, err := os.ReadDir(pipeline.ProjectionsDir(emptied)); err != nil || len(entries) != 0 {
		t.Fatalf("the refused replay left %d entries in the empty directory given (%v)", len(entries), err)
	}
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", emptied, "--until", "chronicle.sessions:0:5").CombinedOutput(); err != nil {
		t.Fatalf("the corrected replay into the emptied directory: %v\n%s", err, out)
	}
	for _, until := range []string{"chronicle.nope:0:1", "chronicle.sessions:0:100000"} {
		out, err := exec.Command(binary, "replay", "--data", data, "--into", into, "--until", until).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--until") {
			t.Fatalf("replay --until %s: %v\n%s\nwant a refusal naming --until", until, err, out)
		}
		if _, err := os.Stat(into); !os.IsNotExist(err) {
			t.Fatalf("replay --until %s refused, but the directory it made, %s, exists (%v)", until, into, err)
		}
		if out, err := exec.Command(binary, "digest", "--data", into).CombinedOutput(); err == nil {
			t.Fatalf("digest of the refused replay's directory succeeded:\n%s", out)
		}
	}
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", into, "--until", "chronicle.sessions:0:5").CombinedOutput(); err != nil {
		t.Fatalf("the corrected replay: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "digest", "--data", into).CombinedOutput(); err != nil || !strings.Contains(string(out), "all") {
		t.Fatalf("digest of the corrected replay: %v\n%s", err, out)
	}
	// a store held read-only, as inspect holds it, is locked: digest
	// says which processes hold one and where the digest is then
	held, err := projections.Open(pipeline.ProjectionsDir(into), projections.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if out, err := exec.Command(binary, "digest", "--data", into).CombinedOutput(); err == nil || !strings.Contains(string(out), "a chronicle serve or inspect running on it holds it, even read-only, and answers GET /v1/digest") {
		t.Fatalf("digest of a store an inspect holds: %v\n%s", err, out)
	}
}

// TestSearchRefusesABusyGroup: `search game24 --brokers` against brokers
// where a service runs the processors' group is refused at once, naming
// the group, instead of waiting 30 s for steps it would never be assigned.
func TestSearchRefusesABusyGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	out, err := exec.Command(binary, "search", "game24", "--brokers", strings.Join(p.Broker.Addrs(), ","), "--data", t.TempDir(), "--from", "901", "--to", "901").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chronicle.processors") || !strings.Contains(string(out), "member") {
		t.Fatalf("search against a busy group: %v\n%s\nwant a refusal naming the processors' group", err, out)
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	// import tot runs searches the same way: refused the same way (it
	// waited 33 s and blamed dead letters)
	t0 = time.Now()
	out, err = exec.Command(binary, "import", "tot", "bundled", "--brokers", strings.Join(p.Broker.Addrs(), ","), "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chronicle.processors") {
		t.Fatalf("import tot against a busy group: %v\n%s\nwant a refusal naming the processors' group", err, out)
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Fatalf("import tot's refusal took %v", d)
	}
}

// TestReplayBeforeTheLogWarns: an --until before the log's first record
// (the README's analyst reads event times, the log's records carry the
// time Kafka received them) builds the empty state, as asked, but says
// why on stderr instead of printing an empty digest without a word.
func TestReplayBeforeTheLogWarns(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	into := filepath.Join(t.TempDir(), "asof")
	out, err := exec.Command(binary, "replay", "--data", data, "--into", into, "--until", "2001-01-01T00:00:00Z").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"records":0`) || !strings.Contains(string(out), "warning: no record of the log is stamped at or before --until") {
		t.Fatalf("replay --until before the log: %v\n%s\nwant the empty state and the warning", err, out)
	}
	// a time after the replay started: the log as it was then, said so
	out, err = exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "later"), "--until", "2099-01-01T00:00:00Z").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is after the replay started") {
		t.Fatalf("replay --until 2099: %v\n%s\nwant the warning", err, out)
	}
	// an explicit empty --until (a script's empty variable) is refused:
	// it replayed the whole log as if it were an as-of state
	out, err = exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "empty"), "--until", "").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--until: empty") {
		t.Fatalf("replay --until \"\": %v\n%s\nwant a refusal", err, out)
	}
}

// TestAuditRefusesAnotherLog: audit, like serve, refuses a store that was
// not built from the log it is given — here two directories built from
// the same events, so only the topic ids tell the logs apart. Before,
// audit passed on one's projections with the other's log (serve refused
// the same directory), and with another log's broker it reported only a
// key difference (an analyst's walkthrough).
func TestAuditRefusesAnotherLog(t *testing.T) {
	a, stopA := logOfOneSession(t)
	stopA()
	b, stopB := logOfOneSession(t)
	stopB()
	if out, err := exec.Command(binary, "audit", "--data", a).CombinedOutput(); err != nil {
		t.Fatalf("audit of a directory with its own log: %v\n%s", err, out)
	}
	mix := t.TempDir()
	if err := os.CopyFS(pipeline.LogDir(mix), os.DirFS(pipeline.LogDir(a))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(pipeline.ProjectionsDir(mix), os.DirFS(pipeline.ProjectionsDir(b))); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "audit", "--data", mix).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does not match its log") || !strings.Contains(string(out), "with id") {
		t.Fatalf("audit of b's projections with a's log: %v\n%s\nwant a refusal naming the topic ids", err, out)
	}
}

// replay --brokers reads the cluster's log: a --data given with it was
// ignored silently (an analyst took the state for DATA's); it is refused,
// naming the flag, before anything is read or written.
func TestReplayRefusesDataWithBrokers(t *testing.T) {
	into := filepath.Join(t.TempDir(), "r")
	out, err := exec.Command(binary, "replay", "--brokers", "127.0.0.1:1", "--data", t.TempDir(), "--into", into).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--data: not read with --brokers") {
		t.Fatalf("replay --brokers --data: %v\n%s", err, out)
	}
	if _, err := os.Stat(into); !os.IsNotExist(err) {
		t.Fatalf("--into %s was created: %v", into, err)
	}
}

// replay's --until warnings quote the moment exactly and in UTC, as the
// replay's start beside it: before, the fraction was dropped and the
// zone kept as given, so "--until 2099-01-01T09:00:00.5+09:00" read
// "2099-01-01T09:00:00+09:00 is after the replay started
// (2026-12-04T20:03:10Z)", another moment in another zone (a time
// walkthrough, 2026-12-04).
func TestReplayWarningsQuoteUntilInUTC(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	for until, want := range map[string]string{
		"2001-01-01T09:00:00.75+09:00": "at or before --until 2001-01-01T00:00:00.75Z",
		"2099-01-01T09:00:00.5+09:00":  "--until 2099-01-01T00:00:00.5Z is after the replay started",
	} {
		out, err := exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "asof"), "--until", until).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("replay --until %s: %v\n%s\nwant %q", until, err, out, want)
		}
	}
}
