package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// TestReplayAndInspectNameTheirLogPositions: an as-of directory says which
// records of the log it holds. replay --until a position prints, after its
// summary, the last record it read on each partition (the position given
// among them), and inspect's GET /healthz answers the same positions in
// "as_of". Before, replay said how many records it read and inspect
// nothing, so an analyst reading an answer of inspect could not tell which
// records it was built from, nor that a session completed there had no
// evaluation yet (its partition of chronicle.evaluations cut by the
// position's timestamp: an analyst walkthrough, 2026-12-07).
func TestReplayAndInspectNameTheirLogPositions(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	asOf := filepath.Join(t.TempDir(), "asof")
	out, err := exec.Command(binary, "replay", "--data", data, "--into", asOf, "--until", "chronicle.sessions:0:5").Output()
	if err != nil {
		t.Fatalf("replay --until chronicle.sessions:0:5: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "as of the log up to ") || !strings.Contains(string(out), "chronicle.sessions:0:5 ") && !strings.Contains(string(out), "chronicle.sessions:0:5,") {
		t.Fatalf("replay's output names no position, or not chronicle.sessions:0:5:\n%s", out)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	out, err = exec.Command(binary, "replay", "--data", data, "--into", whole).Output()
	if err != nil || !strings.Contains(string(out), "chronicle.evaluations:0:0") {
		t.Fatalf("replay of the whole log: %v\n%s\nwant the evaluation's position among the positions", err, out)
	}

	s, closeStore, err := openInspect(asOf)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h struct {
		Status string `json:"status"`
		AsOf   []struct {
			Position string `json:"position"`
		} `json:"as_of"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &h) != nil || h.Status != "read-only" {
		t.Fatalf("GET /healthz: %d %s", resp.StatusCode, body)
	}
	var positions []string
	for _, p := range h.AsOf {
		positions = append(positions, p.Position)
	}
	if len(positions) == 0 || !strings.Contains(strings.Join(positions, " "), "chronicle.sessions:0:5") {
		t.Fatalf("GET /healthz as_of: %v, want chronicle.sessions:0:5 among them (%s)", positions, body)
	}
}

// TestAuditOfAReplayedDirectorySaysWhereItsLogIs: audit of a directory
// replay --into wrote (projections, no log) says that it holds projections
// only and how to audit them against the log they were built from, and
// that advice works: with the original log's broker as --brokers, the
// as-of state audits equal as far as it read. Before, audit said only "no
// log at DIR/log", and nothing said that an as-of state can be audited (an
// analyst walkthrough, 2026-12-07). replay and deadletter list of such a
// directory name the --data the replay read.
func TestAuditOfAReplayedDirectorySaysWhereItsLogIs(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	asOf := filepath.Join(t.TempDir(), "asof")
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", asOf, "--until", "chronicle.sessions:0:5").CombinedOutput(); err != nil {
		t.Fatalf("replay --until: %v\n%s", err, out)
	}
	out, err := exec.Command(binary, "audit", "--data", asOf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds projections only") || !strings.Contains(string(out), "chronicle broker --data ORIGINAL") || !strings.Contains(string(out), "chronicle audit --data "+asOf+" --brokers") {
		t.Fatalf("audit of a replayed directory: %v\n%s\nwant a refusal saying how to audit it against its log", err, out)
	}
	for _, args := range [][]string{{"replay", "--data", asOf, "--into", filepath.Join(t.TempDir(), "again")}, {"deadletter", "list", "--data", asOf}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "holds projections only") || !strings.Contains(string(out), "the --data the replay read") {
			t.Fatalf("%v: %v\n%s\nwant a refusal naming the --data the replay read", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(data), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out, err = exec.Command(binary, "audit", "--data", asOf, "--brokers", strings.Join(b.Addrs(), ",")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "audit ok") {
		t.Fatalf("audit of the replayed directory against its log: %v\n%s\nwant audit ok", err, out)
	}
}

// TestReplayBeforeTheLogSaysWhereItStarts: a replay --until a time before
// the log's first record warns that the state is empty and names the
// record the log starts at and its Kafka timestamp, the earliest --until
// that holds a record; a replay --until that timestamp holds it. Before,
// the warning said only that no record was stamped that early, and the
// analyst guessed times (the demo's import took a second: 04:38:57 gave
// the empty state, 04:38:58 2,132 records; an analyst walkthrough,
// 2026-12-07).
func TestReplayBeforeTheLogSaysWhereItStarts(t *testing.T) {
	before := time.Now()
	data, stop := logOfOneSession(t)
	stop()
	out, err := exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "empty"), "--until", before.Add(-time.Minute).UTC().Format(time.RFC3339Nano)).CombinedOutput()
	if err != nil {
		t.Fatalf("replay --until before the log: %v\n%s", err, out)
	}
	_, rest, found := strings.Cut(string(out), "The log starts at chronicle.sessions:0:0, stamped ")
	if !found {
		t.Fatalf("replay --until before the log:\n%s\nwant the warning naming where the log starts", out)
	}
	stamp, _, found := strings.Cut(rest, ": an --until")
	if !found {
		t.Fatalf("replay --until before the log:\n%s\nwant the timestamp followed by \": an --until\"", out)
	}
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil || ts.Before(before.Add(-time.Second)) || ts.After(time.Now()) {
		t.Fatalf("the log's start stamped %q (%v), want a time of this test's import\n%s", stamp, err, out)
	}
	out, err = exec.Command(binary, "replay", "--data", data, "--into", filepath.Join(t.TempDir(), "first"), "--until", stamp).CombinedOutput()
	if err != nil || strings.Contains(string(out), `"records":0`) || strings.Contains(string(out), "state is empty") {
		t.Fatalf("replay --until %s, the time named: %v\n%s\nwant records", stamp, err, out)
	}
}
