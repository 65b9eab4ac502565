package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/bench"
)

// bench --only prints the figures of the jobs that ran: the others were
// 0 in --json, read as measured zeros (an operator's walkthrough,
// 2026-11-30). Ratios need the raw job; the latency, the default job.
func TestBenchJSONLeavesOutJobsNotRun(t *testing.T) {
	res := bench.Result{Events: 10, RawEventsPerS: 100, RawRuns: []float64{100}, CountEventsPerS: 50, CountRatio: 0.5}
	only := map[string]bool{"raw": true, "count": true}
	m := measuredOnly(res, func(job string) bool { return only[job] })
	for _, k := range []string{"events", "raw_events_per_s", "count_events_per_s", "count_ratio"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing from %v", k, m)
		}
	}
	for _, k := range []string{"default_events_per_s", "default_ratio", "replay_events_per_s", "replay_ratio", "latency_p99_ms", "cluster_cost", "single_events_per_s"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present for a job that did not run", k)
		}
	}
	only = map[string]bool{"count": true}
	if _, ok := measuredOnly(res, func(job string) bool { return only[job] })["count_ratio"]; ok {
		t.Error("count_ratio present without the raw job")
	}
}

// replay --partitions on a log whose topics exist says that it does not
// apply, as serve says it (it was ignored silently: an operator's
// walkthrough, 2026-11-30).
func TestReplayWarnsWhenPartitionsDoNotApply(t *testing.T) {
	data, stop := logOfOneSession(t) // one partition per topic
	stop()
	out, err := exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "r"), "--partitions", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "warning: --partitions 3 does not apply to topics that exist") {
		t.Fatalf("replay --partitions 3 of a 1-partition log said nothing of it:\n%s", out)
	}
	out, err = exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "r")).CombinedOutput()
	if err != nil || strings.Contains(string(out), "warning: --partitions") {
		t.Fatalf("replay without --partitions: %v, want no warning:\n%s", err, out)
	}
}

// chronicle workflow says the API's "add ?scope=" as its own flag (a
// walkthrough, 2026-11-30).
func TestWorkflowCLISaysScopeFlag(t *testing.T) {
	err := cliScopeHint(errors.New(`HTTP 409: workflow "w" exists in several scopes you may access (org:default, project:a): add ?scope=`))
	if err.Error() != `HTTP 409: workflow "w" exists in several scopes you may access (org:default, project:a): add --scope with one of them` {
		t.Fatalf("got %v", err)
	}
	if other := errors.New("HTTP 404: not found"); cliScopeHint(other) != other {
		t.Fatal("another error was rewritten")
	}
}

// bench --only "" is refused naming the flag: a script's empty variable
// ran every job, the whole bench (a CLI walkthrough, 2026-12-05).
func TestBenchOnlyEmptyIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "bench", "--only", "", "--events", "200", "--runs", "1", "--probes", "0", "--dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--only: empty") {
		t.Errorf("bench --only \"\": %v\n%s\nwant a refusal naming --only", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("bench --only \"\" made %s (%v)", dir, err)
	}
}

// With stderr no terminal (a file, a pipe), a progress bar writes one line
// as it starts and no redraws: they went into such files, separated by
// carriage returns (83 of them in one `demo --json 2>err`: a CLI
// walkthrough, 2026-12-05).
func TestProgressWritesNoRedrawsIntoAFile(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	cmd := exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "r"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	// the line names what it counts, records (it read "replaying (N)": a
	// walkthrough, 2026-12-07)
	if s := stderr.String(); strings.Contains(s, "\r") || !regexp.MustCompile(`(?m)^chronicle: replaying the log \(\d+ records\)$`).MatchString(s) {
		t.Fatalf("replay's stderr into a pipe: %q; want the line \"chronicle: replaying the log (N records)\" and no carriage return", s)
	}
}
