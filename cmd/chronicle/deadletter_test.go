package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
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
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[1])
	if err != nil {
		t.Fatal(err)
	}
	done := envs[len(envs)-1]
	if err := p.Producer.Publish(ctx, done); err != nil {
		t.Fatal(err)
	}
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
	out, err = exec.Command(binary, "deadletter", "redrive", "--data", data, "--id", id, "--again", "--json").Output()
	rd = nil
	if err != nil || json.Unmarshal(out, &rd) != nil || len(rd) != 1 || rd[0].ID != id {
		t.Fatalf("redrive --again: %v %s", err, out)
	}
	if again := fmt.Sprintf("%s:%d:%d", rd[0].Topic, rd[0].Partition, rd[0].Offset); again == to {
		t.Fatalf("redrive --again wrote to %s, the first redrive's position", again)
	}
}
