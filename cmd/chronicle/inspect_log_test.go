package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// sessionEventsAnswer is the part of GET /v1/sessions/{id}/events the
// inspect tests read.
type sessionEventsAnswer struct {
	Source string `json:"source"`
	Events []struct {
		Offset   int64           `json:"offset"`
		Position string          `json:"position"`
		Event    json.RawMessage `json:"event"`
	} `json:"events"`
	Evaluations []struct {
		Position string `json:"position"`
	} `json:"evaluations"`
}

// sessionAnswer is the part of GET /v1/sessions/{id} the inspect tests read.
type sessionAnswer struct {
	Scope      string `json:"scope"`
	Evaluation *struct {
		Revision int `json:"revision"`
	} `json:"evaluation"`
	EvaluationLog *struct {
		Record *struct {
			Topic    string `json:"topic"`
			Position string `json:"position"`
		} `json:"record"`
		Completion *struct {
			Position string `json:"position"`
			Type     string `json:"type"`
		} `json:"completion"`
	} `json:"evaluation_log"`
}

// TestInspectReadsTheSessionLogUpToItsState: chronicle inspect answers GET
// /v1/sessions/{id}/events from the log given with --brokers (here a
// broker on the log the state was built from, as chronicle broker --data
// serves it), listing only what the state holds: over a replay --until the
// first session's last event, the first session's events, all at or before
// that position, and for the second session, whose events are all later in
// the same log, a 404 (the scan of a session the index does not hold stops
// at the state's position). Without --brokers the route is a 503 saying how
// to serve the log: for a replay --into directory, chronicle broker --data
// ORIGINAL; for a stopped service's directory, which holds its own log,
// chronicle broker --data DIR. Before, inspect answered that route 503
// whatever it was given, so an analyst could not see which events an
// evaluation was built from (an analyst's walkthrough, 2026-12-07).
//
// GET /v1/sessions/{id} ties the evaluation to the log (evaluation_log):
// the completion it was made from, and, once the log holds it, the
// evaluation's own record, the very positions the events route lists.
func TestInspectReadsTheSessionLogUpToItsState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0", Partitions: 1, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	first := 0 // the first session's events, at offsets 0..first-1 of chronicle.sessions:0
	for i := range 2 {
		envs, err := taubench.Events(recs[i])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = len(envs)
		}
		ids = append(ids, envs[0].SessionID)
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	until := fmt.Sprintf("%s:0:%d", events.TopicSessions, first-1)
	asOf := filepath.Join(t.TempDir(), "asof")
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", asOf, "--until", until).CombinedOutput(); err != nil {
		t.Fatalf("replay --until %s: %v\n%s", until, err, out)
	}

	get := func(srv *httptest.Server, path string, into any) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && into != nil {
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatalf("GET %s: %v\n%s", path, err, b)
			}
		}
		return resp.StatusCode, string(b)
	}
	eventsOf := func(id string) string { return "/v1/sessions/" + url.PathEscape(id) + "/events" }

	// the as-of state, without a log: 503 saying how to serve one
	s, closeStore, err := openInspect(asOf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { closeStore() }()
	if err := inspectLog(ctx, s, asOf, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := get(srv, eventsOf(ids[0]), nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--brokers") || !strings.Contains(body, "chronicle broker --data ORIGINAL") {
		t.Fatalf("inspect without --brokers: GET %s: %d %s, want a 503 naming --brokers and chronicle broker --data ORIGINAL", eventsOf(ids[0]), code, body)
	}

	// --brokers that serve nothing: inspect fails at start naming them,
	// within InspectLogCheckWait (no process listens on the port)
	start := time.Now()
	if err := inspectLog(ctx, s, asOf, []string{"127.0.0.1:22917"}); err == nil || !strings.Contains(err.Error(), "--brokers 127.0.0.1:22917") || time.Since(start) > InspectLogCheckWait+5*time.Second {
		t.Fatalf("inspect --brokers 127.0.0.1:22917 (nothing there): %v after %s, want an error naming --brokers within %s", err, time.Since(start), InspectLogCheckWait)
	} else {
		t.Logf("inspect --brokers of nothing, after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}

	// the log the state was built from, served as chronicle broker serves it
	b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(data), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := inspectLog(ctx, s, asOf, b.Addrs()); err != nil {
		t.Fatalf("inspect --brokers of the log the state was built from: %v", err)
	}
	var ev sessionEventsAnswer
	code, body = get(srv, eventsOf(ids[0]), &ev)
	if code != http.StatusOK || len(ev.Events) != first {
		t.Fatalf("inspect --brokers: GET %s: %d %s, want the first session's %d events", eventsOf(ids[0]), code, body, first)
	}
	completion := ""
	for _, e := range ev.Events {
		if e.Offset > int64(first-1) {
			t.Errorf("event at %s listed, past the state's %s", e.Position, until)
		}
		var ce struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(e.Event, &ce) == nil && ce.Type == string(events.SessionCompleted) {
			completion = e.Position
		}
	}
	var sess sessionAnswer
	if code, body := get(srv, "/v1/sessions/"+url.PathEscape(ids[0]), &sess); code != http.StatusOK || sess.Evaluation == nil || sess.EvaluationLog == nil || sess.EvaluationLog.Completion == nil ||
		completion == "" || sess.EvaluationLog.Completion.Position != completion || sess.EvaluationLog.Completion.Type != string(events.SessionCompleted) {
		t.Errorf("GET session %s in the as-of state: %d %s, want evaluation_log.completion at %s (the completion the events route lists)", ids[0], code, body, completion)
	}
	// the second session is in the first's scope (both taubench's): named,
	// so that the scan reads that scope's records of it
	later := eventsOf(ids[1]) + "?scope=" + url.QueryEscape(sess.Scope)
	if code, body := get(srv, later, nil); sess.Scope == "" || code != http.StatusNotFound {
		t.Errorf("inspect --brokers: GET %s (a session only later in the log): %d %s, want 404: the as-of state shows no later record", later, code, body)
	}
	srv.Close()
	closeStore()
	closeStore = func() {}

	// a stopped service's directory holds its own log: the 503 names it
	s, closeStore, err = openInspect(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := inspectLog(ctx, s, data, nil); err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(s.Handler())
	defer srv.Close()
	if code, body := get(srv, eventsOf(ids[0]), nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "chronicle broker --data "+data) || !strings.Contains(body, "--brokers") {
		t.Fatalf("inspect of a stopped directory without --brokers: GET %s: %d %s, want a 503 naming chronicle broker --data %s and --brokers", eventsOf(ids[0]), code, body, data)
	}
	if err := inspectLog(ctx, s, data, b.Addrs()); err != nil {
		t.Fatal(err)
	}
	ev = sessionEventsAnswer{}
	if code, body := get(srv, eventsOf(ids[0]), &ev); code != http.StatusOK || len(ev.Evaluations) == 0 {
		t.Fatalf("inspect --brokers of the stopped directory: GET %s: %d %s, want its events and evaluation", eventsOf(ids[0]), code, body)
	}
	sess = sessionAnswer{}
	code, body = get(srv, "/v1/sessions/"+url.PathEscape(ids[0]), &sess)
	if code != http.StatusOK || sess.EvaluationLog == nil || sess.EvaluationLog.Record == nil || sess.EvaluationLog.Record.Topic != string(events.TopicEvaluations) ||
		sess.EvaluationLog.Record.Position != ev.Evaluations[len(ev.Evaluations)-1].Position || sess.EvaluationLog.Completion == nil || sess.EvaluationLog.Completion.Position != completion {
		t.Errorf("GET session %s of the stopped directory: %d %s, want evaluation_log.record at %s (the evaluation the events route lists) and completion at %s", ids[0], code, body, ev.Evaluations[len(ev.Evaluations)-1].Position, completion)
	}
	if code, body := get(srv, later, nil); code != http.StatusOK {
		t.Errorf("inspect --brokers of the stopped directory: GET %s: %d %s, want 200 (the whole log is its state)", later, code, body)
	}
}
