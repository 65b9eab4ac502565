package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
