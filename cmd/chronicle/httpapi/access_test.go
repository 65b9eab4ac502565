package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// scopedServer is a pipeline behind an API with three tokens: tok-a
// (project:a), tok-b (project:b) and tok-admin (*).
func scopedServer(t *testing.T) (*pipeline.Pipeline, *httpapi.Server, string) {
	t.Helper()
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
		// writes project:a, reads nothing (accesstest's WriteOnly caller)
		{Name: "wo", SHA256: access.Hash("tok-wo"), Write: []string{"project:a"}},
	}}
	api := &httpapi.Server{P: p, Tokens: &tokens}
	srv := httptest.NewServer(conforming(t, api.Handler())) // every answer checked against openapi.json
	t.Cleanup(srv.Close)
	return p, api, srv.URL
}

// call sends body as JSON with token and decodes a JSON answer.
func call(t *testing.T, base, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func waitCaughtUp(t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// sessionIn is the tau-bench session i with its events moved to scope and
// its task text marked with secret.
func sessionIn(t *testing.T, i int, scope, secret string) ([]events.Envelope, string) {
	t.Helper()
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[i])
	if err != nil {
		t.Fatal(err)
	}
	for j := range envs {
		envs[j].Scope = scope
		envs[j].Source += "/" + scope
		if envs[j].Type == events.SessionStarted {
			var d map[string]any
			_ = json.Unmarshal(envs[j].Data, &d)
			d["original_task"] = secret + " " + d["original_task"].(string)
			envs[j].Data, _ = json.Marshal(d)
		}
	}
	return envs, envs[0].SessionID
}

// pausedSearchIn is a tree search of scope paused at its first node, its
// goal marked with secret.
func pausedSearchIn(t *testing.T, scope, id, secret string) []events.Envelope {
	t.Helper()
	root, parent := "root state", "r"
	h, score := 0.0, 1.0
	f := 0.5
	hardCheck := events.PrunedHardCheck
	evs := []struct {
		typ  events.Type
		data any
	}{
		{events.SearchStarted, events.SearchStartedData{SearchID: id, Goal: "obtain 24 " + secret, RootState: root,
			Config:   events.SearchConfig{BeamWidth: 2, K: 4, MaxDepth: 3, CostPerStep: 0.5},
			Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}}},
		{events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: id, Expansion: 1, NodeID: "r", Tokens: 10}},
		{events.SearchNodeExpanded, events.SearchNodeData{SearchID: id, NodeID: "r.0", ParentID: &parent, Expansion: 1, Depth: 1, State: "a",
			StateDigest: treesearch.Digest("a"), Candidate: "step " + secret, G: 0.5, H: &h, F: &f, Score: &score, NeedsHuman: true}},
		// a pruned child: h = ∞ is "h": null, "f": null (the answers
		// are checked against openapi.json, which said number)
		{events.SearchNodeExpanded, events.SearchNodeData{SearchID: id, NodeID: "r.1", ParentID: &parent, Expansion: 1, Depth: 1, State: "b",
			StateDigest: treesearch.Digest("b"), Candidate: "bad step", G: 0.5, HardFail: true, PrunedReason: &hardCheck}},
		{events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: id, Expansion: 1, NodeID: "r", Children: []string{"r.0", "r.1"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 10}},
		{events.SearchPaused, events.SearchPausedData{SearchID: id, NodeID: "r.0", Question: "allowed?"}},
	}
	var out []events.Envelope
	for i, e := range evs {
		env, err := events.New(e.typ, "accesstest/"+scope, fmt.Sprintf("%s-%d", id, i), time.Now(), e.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		out = append(out, env)
	}
	return out
}

// TestAccessConformance runs the exported access-control suite over every
// registered route and the MCP tools.
func TestAccessConformance(t *testing.T) {
	p, api, base := scopedServer(t)
	secret := "SECRET-A-7f3c"
	envs, sid := sessionIn(t, 3, "project:a", secret)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("seeding project:a: %d %v", code, m)
	}
	bEnvs, _ := sessionIn(t, 5, "project:b", "B-ONLY")
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", bEnvs); code != 202 {
		t.Fatalf("seeding project:b: %d %v", code, m)
	}
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Check fare rules " + secret, "description": "Before changing flights, check the fare class.", "content": "Look up the reservation, then the fare rules. " + secret, "outcome": "success"})
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	wfc := client.New(base, "tok-a")
	ctx := context.Background()
	if _, err := wfc.Update(ctx, "wf-a", 0, events.ChannelContext, map[string]any{"note": secret}); err != nil {
		t.Fatal(err)
	}
	cp, err := wfc.Checkpoint(ctx, "wf-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wfc.Interrupt(ctx, "wf-a", events.DecisionHuman, "approve "+secret+"?", "approve", "reject")
	if err != nil {
		t.Fatal(err)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "search-1", secret)); code != 202 {
		t.Fatalf("seeding the search: %d %v", code, m)
	}
	pass, err := events.New(events.ReasoningPassCompleted, "accesstest/reasoning", "pass-a-1", time.Unix(1700000000, 0).UTC(), events.ReasoningPassData{
		TaskID: "rt/1", Task: "Answer " + secret, PassNumber: 1, Phase: "C", TTLRemaining: 2, Output: secret,
		Plan:        &events.Plan{Steps: []events.PlanStep{{StepID: "s1", Description: "look up " + secret}}},
		Convergence: events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 1, Consistency: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	pass.Scope = "project:a"
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{pass}); code != 202 {
		t.Fatalf("seeding project:a's reasoning task: %d %v", code, m)
	}
	// a completion of a session that never started: accepted, then
	// dead-lettered; its event id holds the secret, so GET /v1/deadletters
	// must not show it to the other scope
	orphan := envs[len(envs)-1]
	orphan.SessionID, orphan.ID = "never-started", "dl-"+secret
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{orphan}); code != 202 {
		t.Fatalf("seeding project:a's dead letter: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	waitDeadLetters(t, p, base, "tok-a", "", 1)
	pattern := patternOf(t, p, "project:a")
	f := accesstest.Fixture{Reasoning: "rt/1", Search: "search-1", Pattern: pattern,
		Workflow: "wf-a", WorkflowCheckpoint: cp.CheckpointID, WorkflowDecision: dec.EventID,
		BaseURL: base, OwnToken: "tok-a", OtherToken: "tok-b", AdminToken: "tok-admin", WriteOnlyToken: "tok-wo",
		OwnScope: "project:a", OtherScope: "project:b", Session: sid, Memory: rec["id"].(string), Secrets: []string{secret},
		Response: openAPIResponses(t),
		State: func(t *testing.T) string {
			waitCaughtUp(t, p)
			var b strings.Builder
			for _, path := range []string{"/v1/sessions/" + url.PathEscape(sid), "/v1/sessions/" + url.PathEscape(sid) + "/events", "/v1/memories/" + rec["id"].(string), "/v1/memories/" + rec["id"].(string) + "/history", "/v1/workflows/wf-a", "/v1/workflows/wf-a/checkpoints", "/v1/searches/search-1", "/v1/searches/search-1/nodes", "/v1/reasoning/rt%2F1", "/v1/reasoning/rt%2F1/history"} {
				code, m := call(t, base, "tok-a", "GET", path, nil)
				fmt.Fprintf(&b, "%s %d %v\n", path, code, m)
			}
			return b.String()
		},
	}
	var registered []string
	for _, r := range api.Routes() {
		registered = append(registered, r.Pattern)
	}
	accesstest.Run(t, f, registered, accesstest.Cases())
	accesstest.RunMCP(t, f)
}

// The suite fails for a route that has no case.
func TestAccessConformanceNeedsEveryRoute(t *testing.T) {
	ft := &testing.T{}
	done := make(chan struct{})
	go func() { // Run's t.Errorf on a bare testing.T must not end this test
		defer close(done)
		defer func() { _ = recover() }()
		accesstest.Run(ft, accesstest.Fixture{State: func(*testing.T) string { return "" }}, []string{"GET /v1/new-route"}, nil)
	}()
	<-done
	if !ft.Failed() {
		t.Fatal("a registered route without a case did not fail the suite")
	}
}

// Issue 9, defects B and D: project:b posting into project:a's session id
// gets a session of its own; project:a's session keeps its minutes, and
// each scope reads its own under the same id.
func TestSameIDInTwoScopesIsTwoSessions(t *testing.T) {
	p, _, base := scopedServer(t)
	// D: b squats the id first
	aEnvs, sid := sessionIn(t, 3, "project:a", "A-TASK")
	squat := aEnvs[1] // a minute of the session, rewritten into project:b
	squat.Scope, squat.Source, squat.ID = "project:b", "squatter", "squat-1"
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{squat}); code != 202 {
		t.Fatalf("b's minute: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", aEnvs); code != 202 {
		t.Fatalf("a's session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, a := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid), nil)
	if code != 200 || a["scope"] != "project:a" || !strings.Contains(fmt.Sprint(a["task"]), "A-TASK") {
		t.Fatalf("a reading its session: %d %v", code, a)
	}
	minutesA := a["minutes"]
	code, b := call(t, base, "tok-b", "GET", "/v1/sessions/"+url.PathEscape(sid), nil)
	if code != 200 || b["scope"] != "project:b" || strings.Contains(fmt.Sprint(b), "A-TASK") || b["evaluation"] != nil {
		t.Fatalf("b reading the squatted id: %d %v", code, b)
	}
	// B: b posts another minute into "a's" id: it lands in b's session
	squat.ID = "squat-2"
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{squat}); code != 202 {
		t.Fatalf("b's second minute: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	if _, a2 := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid), nil); a2["minutes"] != minutesA {
		t.Fatalf("a's minutes moved %v → %v after b's posts", minutesA, a2["minutes"])
	}
	_, evs := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/events", nil)
	if strings.Contains(fmt.Sprint(evs), "squatter") {
		t.Fatal("b's minute appears in a's event list")
	}
	// an admin reading every scope must name one
	if code, m := call(t, base, "tok-admin", "GET", "/v1/sessions/"+url.PathEscape(sid), nil); code != 409 {
		t.Fatalf("admin without ?scope=: %d %v, want 409", code, m)
	}
	if code, m := call(t, base, "tok-admin", "GET", "/v1/sessions/"+url.PathEscape(sid)+"?scope=project:b", nil); code != 200 || m["scope"] != "project:b" {
		t.Fatalf("admin with ?scope=project:b: %d %v", code, m)
	}
}

// Issue 9, defect A: the log of a session the projection does not hold
// (its start was dead-lettered, or not yet processed) is read only with
// the session's own scope, from the records' own scope attribute.
func TestSessionLogOfUnprojectedSession(t *testing.T) {
	p, _, base := scopedServer(t)
	envs, sid := sessionIn(t, 3, "project:a", "X")
	// only a completion: the sessions processor dead-letters it, the log keeps it
	last := envs[len(envs)-1]
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{last}); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/events", nil); code != 404 {
		t.Fatalf("b reading a's unprojected log: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/events?scope=project:a", nil); code != 404 {
		t.Fatalf("b naming project:a: %d %v", code, m)
	}
	code, m := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/events", nil)
	if code != 200 || len(m["events"].([]any)) != 1 {
		t.Fatalf("a reading its own unprojected log: %d %v", code, m)
	}
	// a session a projects, and b's unprojected one of the same id: b reads
	// its own, and the answer for an id b does not have is the same
	// whether a has it or not (b's answer was "not found" for a's id and
	// "has no events in the log" for another: an existence oracle; found
	// by a tenant-isolation walkthrough)
	full, shared := sessionIn(t, 4, "project:a", "Y")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", full); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	waitCaughtUp(t, p)
	_, missing := call(t, base, "tok-b", "GET", "/v1/sessions/never-there/events", nil)
	code, held := call(t, base, "tok-b", "GET", "/v1/sessions/"+url.PathEscape(shared)+"/events", nil)
	if code != 404 || strings.ReplaceAll(fmt.Sprint(held["error"]), shared, "ID") != strings.ReplaceAll(fmt.Sprint(missing["error"]), "never-there", "ID") {
		t.Fatalf("b reading an id only a holds: %d %v; for an id nobody holds: %v (want the same answer)", code, held, missing)
	}
	bEnvs, _ := sessionIn(t, 4, "project:b", "Y")
	bLast := bEnvs[len(bEnvs)-1]
	bLast.SessionID = shared
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{bLast}); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	code, m = call(t, base, "tok-b", "GET", "/v1/sessions/"+url.PathEscape(shared)+"/events", nil)
	if code != 200 || len(m["events"].([]any)) != 1 {
		t.Fatalf("b reading its own unprojected log of an id a also holds: %d %v", code, m)
	}
}

// Issue 9, defect E and G: an event above the broker's record limit is a
// 413 naming the limit, not a 503 to retry; a body that is not JSON is 415.
func TestEventSizeAndContentType(t *testing.T) {
	_, srv := setup(t)
	envs, _ := sessionIn(t, 3, "project:a", "X")
	big := envs[1]
	var d map[string]any
	_ = json.Unmarshal(big.Data, &d)
	d["memory_note"] = strings.Repeat("x", 999_000)
	big.Data, _ = json.Marshal(d)
	b, _ := json.Marshal(big)
	code, m := post(t, srv, b)
	if code != 413 || !strings.Contains(fmt.Sprint(m["error"]), fmt.Sprint(events.MaxEventBytes)) {
		t.Fatalf("a 1 MB event: %d %v, want 413 naming the %d-byte limit", code, m, events.MaxEventBytes)
	}
	resp, err := http.Post(srv.URL+"/v1/events", "text/plain", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var e415 map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&e415)
	resp.Body.Close()
	// the reason as a member too (it had the text alone: a subscriber's walkthrough)
	if resp.StatusCode != 415 || e415["reason"] == nil {
		t.Fatalf("text/plain: %d %v, want 415 with a reason", resp.StatusCode, e415)
	}
	ok, _ := json.Marshal(envs[0])
	resp, err = http.Post(srv.URL+"/v1/events", "application/cloudevents+json; charset=utf-8", bytes.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("application/cloudevents+json: %d, want 202", resp.StatusCode)
	}
	// JSON is UTF-8: another charset is a 415, where it was accepted and
	// the body read as UTF-8 (a Python integrator's walkthrough)
	for _, ct := range []string{"application/cloudevents+json; charset=latin-1", "application/json; charset=ISO-8859-1"} {
		resp, err = http.Post(srv.URL+"/v1/events", ct, bytes.NewReader(ok))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 415 || !strings.Contains(string(b), "UTF-8") {
			t.Fatalf("%s: %d %s, want 415 saying JSON is UTF-8", ct, resp.StatusCode, b)
		}
	}
	bad := envs[0]
	bad.SessionID, bad.ID = "has space", "bad-id"
	b, _ = json.Marshal(bad)
	if code, m := post(t, srv, b); code != 400 || m["pointer"] != "/sessionid" {
		t.Fatalf("session id with a space: %d %v, want 400 at /sessionid", code, m)
	}
}

// Issue 9, defect F: a body trickled one byte at a time is cut off by the
// whole-request read deadline (shortened here from ReadTimeout's 30 s).
func TestTrickledBodyIsCutOff(t *testing.T) {
	p, _ := setup(t)
	hs := httpapi.NewHTTPServer((&httpapi.Server{P: p}).Handler())
	if hs.ReadTimeout != httpapi.ReadTimeout || hs.ReadTimeout <= 0 || hs.ReadHeaderTimeout <= 0 {
		t.Fatalf("NewHTTPServer: read timeouts %v / %v", hs.ReadHeaderTimeout, hs.ReadTimeout)
	}
	hs.ReadTimeout = 2 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if _, err := conn.Write([]byte("[")); err != nil {
			break // the server closed the connection
		}
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if n, _ := conn.Read(make([]byte, 512)); n > 0 {
			break // it answered (an error) instead of waiting for the body
		}
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("a trickled body kept the request open %v with a 2 s read deadline", el)
	}
}

// TestScopelessEventGoesToTheTokensScope: an event without a scope posted
// with a token that may not write org:default goes to the token's default
// write scope, as POST /v1/memories and the MCP tools do (a new user's
// walkthrough: it was a 403 for org:default, a scope the producer never
// named); the admin token's stays org:default's.
func TestScopelessEventGoesToTheTokensScope(t *testing.T) {
	p, _, base := scopedServer(t)
	envs, sid := sessionIn(t, 2, "", "NOSCOPE")
	for i := range envs {
		envs[i].Scope = ""
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("scope-less events with a project:a token: %d %v; want 202", code, m)
	}
	waitCaughtUp(t, p)
	if code, m := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(sid), nil); code != 200 || m["scope"] != "project:a" {
		t.Fatalf("the session with token a: %d %v; want it in project:a", code, m)
	}
	if code, _ := call(t, base, "tok-admin", "GET", "/v1/sessions/"+url.PathEscape(sid)+"?scope=org:default", nil); code != 404 {
		t.Fatalf("the session in org:default: %d; want 404", code)
	}
}

// A token that reads a scope but may not write it gets a 403 naming the
// scope from a write route about an entity it can read there, with or
// without ?scope=; before, resuming a search it had just read was "search
// not found" (404), where POST /v1/events says 403 (a walkthrough of tree
// search). A scope it does not read stays a 404.
func TestWriteToAReadOnlyScopeIsA403(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "reader", SHA256: access.Hash("tok-r"), Read: []string{"project:a"}, Write: []string{"project:z"}},
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Producer.Publish(ctx, pausedSearchIn(t, "project:a", "same", "secret")...); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, p)
	if code, m := call(t, srv.URL, "tok-r", "GET", "/v1/searches/same?scope=project:a", nil); code != 200 {
		t.Fatalf("read: %d %v", code, m)
	}
	resume := map[string]any{"decision": "approve", "by": "reader"}
	for _, path := range []string{"/v1/searches/same/resume?scope=project:a", "/v1/searches/same/resume"} {
		code, m := call(t, srv.URL, "tok-r", "POST", path, resume)
		if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(m["error"]), "project:a") {
			t.Errorf("POST %s with a read-only token: %d %v, want 403 naming project:a", path, code, m)
		}
	}
	// another tenant learns nothing
	for _, path := range []string{"/v1/searches/same/resume?scope=project:a", "/v1/searches/same/resume"} {
		if code, m := call(t, srv.URL, "tok-b", "POST", path, resume); code != http.StatusNotFound {
			t.Errorf("POST %s with another scope's token: %d %v, want 404", path, code, m)
		}
	}
}
