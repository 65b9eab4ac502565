package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// serve wires its slog logger (stderr) into the pipeline, so the workers'
// lines appear: README says the search resume worker "logs so" when it
// leaves a search to another driver, but serve set no pipeline logger
// and logged nothing (a no-op logger; found by an agent-runtime
// developer's walkthrough). A resume of a search whose components are not
// built in makes the worker log that line.
func TestServeLogsTheWorkers(t *testing.T) {
	base, logs := startServeLogs(t)
	parent := "r"
	h, score, f := 0.0, 1.0, 0.5
	evs := []struct {
		typ  events.Type
		data any
	}{
		{events.SearchStarted, events.SearchStartedData{SearchID: "logged", Goal: "obtain 24", RootState: "root",
			Config:   events.SearchConfig{BeamWidth: 2, K: 4, MaxDepth: 3, CostPerStep: 0.5},
			Proposer: events.SearchComponent{Name: "mine", Version: "1"}, Evaluator: events.SearchComponent{Name: "mine", Version: "1"}}},
		{events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: "logged", Expansion: 1, NodeID: "r", Tokens: 10}},
		{events.SearchNodeExpanded, events.SearchNodeData{SearchID: "logged", NodeID: "r.0", ParentID: &parent, Expansion: 1, Depth: 1, State: "a",
			StateDigest: treesearch.Digest("a"), Candidate: "step", G: 0.5, H: &h, F: &f, Score: &score, NeedsHuman: true}},
		{events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: "logged", Expansion: 1, NodeID: "r", Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 10}},
		{events.SearchPaused, events.SearchPausedData{SearchID: "logged", NodeID: "r.0", Question: "allowed?"}},
	}
	var batch []events.Envelope
	for i, e := range evs {
		env, err := events.New(e.typ, "test/logger", fmt.Sprintf("logged-%d", i), time.Now(), e.data)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, env)
	}
	post := func(path string, v any) (int, string) {
		b, _ := json.Marshal(v)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		return resp.StatusCode, out.String()
	}
	if code, body := post("/v1/events", batch); code != http.StatusAccepted {
		t.Fatalf("seed: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := post("/v1/searches/logged/resume", map[string]any{"decision": "approve"})
		if code == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resume: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const want = "treesearch-resume: search org:default/logged: proposer mine/1, evaluator mine/1 need their own driver: left alone"
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's stderr has no line of the resume worker (%q):\n%s", want, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
