package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// `chronicle deadletter list|redrive --data DIR` on a stopped directory
// whose log holds a completion for a session that never started.
func TestDeadletterCLI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := t.TempDir()
	p, done := startWithRefusedCompletion(ctx, t, data)
	for {
		ls, err := deadletter.List(ctx, p.Broker.Addrs())
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(binary, "deadletter", "list", "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var ls []deadletter.Letter
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatalf("list output %q: %v", out, err)
	}
	var id string
	for _, l := range ls {
		if l.Handler == sessions.Name+"@"+string(events.TopicSessions) && l.EventID == done.ID && l.Topic == string(events.TopicSessions) {
			id = l.ID
			// the event's source and scope, as GET /v1/deadletters
			// answers them (the JSON left them out: a walkthrough)
			if l.EventSource != done.Source || l.Scope != done.EffectiveScope() {
				t.Errorf("letter %s: event_source %q, scope %q; want %q, %q", l.ID, l.EventSource, l.Scope, done.Source, done.EffectiveScope())
			}
		}
	}
	if id == "" {
		t.Fatalf("no letter of the sessions processor for %s in %s", done.ID, out)
	}
	out, err = exec.Command(binary, "deadletter", "list", "--data", data).Output()
	if err != nil || !strings.Contains(string(out), id) || !strings.Contains(string(out), "never started") && !strings.Contains(string(out), "before it was started") ||
		!strings.Contains(string(out), "TYPE") || !strings.Contains(string(out), string(done.Type)) {
		t.Fatalf("table: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "deadletter", "redrive", "--data", data).CombinedOutput(); err == nil || !strings.Contains(string(out), "--id or --all") {
		t.Fatalf("redrive without --id or --all: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "deadletter", "redrive", "--data", data, "--all", "--id", id).CombinedOutput(); err == nil || !strings.Contains(string(out), "--id and --all: give one of them, not both") {
		t.Fatalf("redrive with --id and --all: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "deadletter", "redrive", "--data", data, "--id", "chronicle.sessions:0:999").CombinedOutput(); err == nil || !strings.Contains(string(out), "chronicle.sessions:0:999") {
		t.Fatalf("redrive of an unknown id: %v %s", err, out)
	}
	out, err = exec.Command(binary, "deadletter", "redrive", "--data", data, "--id", id, "--json").Output()
	if err != nil {
		t.Fatalf("redrive: %v", err)
	}
	var rd []deadletter.Redriven
	if err := json.Unmarshal(out, &rd); err != nil || len(rd) != 1 || rd[0].ID != id || rd[0].Topic != string(events.TopicSessions) {
		t.Fatalf("redrive output %s: %v", out, err)
	}
	to := fmt.Sprintf("%s:%d:%d", rd[0].Topic, rd[0].Partition, rd[0].Offset)

	// the letters of the id are listed as redriven, with where to; before
	// the redrive notes a redriven letter was listed as before, and
	// redrive --all re-produced it again each time
	out, err = exec.Command(binary, "deadletter", "list", "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("list after the redrive: %v", err)
	}
	ls = nil
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatalf("list output %q: %v", out, err)
	}
	redriven := 0
	for _, l := range ls {
		if l.ID == id {
			if l.RedrivenTo != to || l.RedrivenAt == "" || l.Pending() {
				t.Fatalf("letter %+v after its redrive to %s: want it marked", l, to)
			}
			redriven++
		}
	}
	if redriven == 0 || len(ls) < redriven {
		t.Fatalf("list after the redrive %s: no letter of %s", out, id)
	}
	out, err = exec.Command(binary, "deadletter", "list", "--data", data).Output()
	if err != nil || !strings.Contains(string(out), "REDRIVEN TO") || !strings.Contains(string(out), to) {
		t.Fatalf("table after the redrive: %v %s", err, out)
	}
	// --id of a redriven letter is refused, naming where it went; --all
	// skips it; --again re-produces it once more
	if out, err := exec.Command(binary, "deadletter", "redrive", "--data", data, "--id", id).CombinedOutput(); err == nil || !strings.Contains(string(out), "already redriven") || !strings.Contains(string(out), to) {
		t.Fatalf("second redrive of %s: %v %s", id, err, out)
	}
	cmd := exec.Command(binary, "deadletter", "redrive", "--data", data, "--all", "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "[]" || !strings.Contains(stderr.String(), "skipped") || !strings.Contains(stderr.String(), id) {
		t.Fatalf("redrive --all after the redrive: %v %s (stderr %s); want nothing re-produced", err, out, stderr.String())
	}
	// and says that it re-produced nothing (a walkthrough, 2026-12-07)
	if !strings.Contains(stderr.String(), "nothing to redrive: the one record dead-lettered in chronicle.deadletter was skipped") {
		t.Fatalf("redrive --all after the redrive: stderr %q; want it to say there was nothing to redrive", stderr.String())
	}
	out, err = exec.Command(binary, "deadletter", "redrive", "--data", data, "--id", id, "--again", "--json").Output()
	rd = nil
	if err != nil || json.Unmarshal(out, &rd) != nil || len(rd) != 1 || rd[0].ID != id {
		t.Fatalf("redrive --again: %v %s", err, out)
	}
	if again := fmt.Sprintf("%s:%d:%d", rd[0].Topic, rd[0].Partition, rd[0].Offset); again == to {
		t.Fatalf("redrive --again wrote to %s, the first redrive's position", again)
	}
}

// `deadletter list` and `deadletter redrive --all` of a log whose
// dead-letter topic is empty say so, and exit 0: list on stdout, where
// its table goes ("no dead letters"; --json the empty array), redrive on
// stderr, where its notes go, its stdout left to the positions (none;
// --json the empty array). Before, list printed only the table's header
// and redrive nothing at all (a walkthrough, 2026-12-07).
func TestEmptyDeadLetterTopicIsSaid(t *testing.T) {
	data := t.TempDir()
	if err := os.Mkdir(filepath.Join(data, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binary, append(append([]string{"deadletter"}, args...), "--data", data)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("deadletter %v: %v (exit 0 wanted)\nstdout %q\nstderr %q", args, err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	if out, _ := run("list"); out != "no dead letters: chronicle.deadletter is empty\n" {
		t.Errorf("list: stdout %q, want it to say there are no dead letters", out)
	}
	if out, _ := run("list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("list --json: stdout %q, want []", out)
	}
	const note = "nothing to redrive: chronicle.deadletter holds no dead letters"
	if out, errOut := run("redrive", "--all"); out != "" || !strings.Contains(errOut, note) {
		t.Errorf("redrive --all: stdout %q, stderr %q; want nothing on stdout and %q on stderr", out, errOut, note)
	}
	if out, errOut := run("redrive", "--all", "--json"); strings.TrimSpace(out) != "[]" || !strings.Contains(errOut, note) {
		t.Errorf("redrive --all --json: stdout %q, stderr %q; want [] on stdout and %q on stderr", out, errOut, note)
	}
}

// `deadletter redrive --all` against a running service re-produces a
// record whose redrive was refused again for the same reason (a completion
// of a session that never started) once, not at every run: the second
// --all skips it, saying why, and --again re-produces it once more (with
// the record already redriven). Before,
// every --all re-produced every such record again, so a log whose letters
// could never be applied grew by their count at each run (a resource-leak
// walkthrough: 16 letters, 3,752 after 25 minutes of runs).
func TestRedriveAllStopsAtARecordRefusedAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, _ := startWithRefusedCompletion(ctx, t, t.TempDir())
	defer p.Close()
	brokers := strings.Join(p.Broker.Addrs(), ",")
	// waitPending waits until n letters wait for a redrive
	waitPending := func(n int) {
		t.Helper()
		for {
			ls, err := deadletter.List(ctx, p.Broker.Addrs())
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for _, l := range ls {
				if l.Pending() {
					ids[l.ID] = true
				}
			}
			if len(ids) == n {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%d records wait for a redrive, want %d", len(ids), n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	redriveAll := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"deadletter", "redrive", "--brokers", brokers, "--all", "--json"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var rd []deadletter.Redriven
		if err != nil || json.Unmarshal(out, &rd) != nil {
			t.Fatalf("redrive --all %v: %v %s (stderr %s)", args, err, out, stderr.String())
		}
		return len(rd), stderr.String()
	}
	waitPending(1)
	if n, stderr := redriveAll(); n != 1 {
		t.Fatalf("first redrive --all re-produced %d records (stderr %s), want 1", n, stderr)
	}
	waitPending(1) // the redriven record, refused again
	n, stderr := redriveAll()
	if n != 0 || !strings.Contains(stderr, "refused again for the same reasons") {
		t.Fatalf("second redrive --all re-produced %d records (stderr %q), want 0 and the skip said", n, stderr)
	}
	// --again: the first record once more (already redriven) and the one
	// refused again
	if n, stderr := redriveAll("--again"); n != 2 {
		t.Fatalf("redrive --all --again re-produced %d records (stderr %s), want 2", n, stderr)
	}
}

// startWithRefusedCompletion starts a pipeline on data and publishes the
// completion of a tau-bench session that never started, which the
// sessions processor dead-letters; it returns the pipeline and that event.
func startWithRefusedCompletion(ctx context.Context, t *testing.T, data string) (*pipeline.Pipeline, events.Envelope) {
	t.Helper()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sampleRecords()
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[1])
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	done := envs[len(envs)-1]
	if err := p.Producer.Publish(ctx, done); err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p, done
}
