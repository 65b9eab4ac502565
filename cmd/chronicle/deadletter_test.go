package main

import (
	"context"
	"encoding/json"
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
	recs, err := taubench.SampleRecords()
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
}
