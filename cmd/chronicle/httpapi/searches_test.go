package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// GET /v1/searches/{id} shows the frontier and the best path, /nodes pages
// through the nodes, and POST /v1/searches/{id}/resume records the human's
// decision on a paused search (409 once it runs again, 400 for a bad
// decision); the same id in another scope is another search.
func TestSearchRoutes(t *testing.T) {
	p, _, base := scopedServer(t)
	for _, sc := range []string{"project:a", "project:b"} {
		tok := map[string]string{"project:a": "tok-a", "project:b": "tok-b"}[sc]
		if code, m := call(t, base, tok, "POST", "/v1/events", pausedSearchIn(t, sc, "s/1", "SECRET-"+sc)); code != 202 {
			t.Fatalf("seed %s: %d %v", sc, code, m)
		}
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "GET", "/v1/searches/s%2F1", nil)
	if code != 200 || m["status"] != treesearch.StatusPaused || m["goal"] != "obtain 24 SECRET-project:a" {
		t.Fatalf("GET search: %d %v", code, m)
	}
	if bp, _ := m["best_path"].([]any); len(bp) != 2 {
		t.Fatalf("best path %v", m["best_path"])
	}
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=1", nil)
	if nodes, _ := m["nodes"].([]any); code != 200 || len(nodes) != 1 || m["next_cursor"] != "r" {
		t.Fatalf("nodes page 1: %d %v", code, m)
	}
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=1&cursor=r", nil)
	if nodes, _ := m["nodes"].([]any); code != 200 || len(nodes) != 1 || m["next_cursor"] != "r.0" {
		t.Fatalf("nodes page 2: %d %v", code, m)
	}
	// the pruned node: h = ∞ is null (the answer is checked against
	// openapi.json, whose SearchNode said number)
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=1&cursor=r.0", nil)
	nodes, _ := m["nodes"].([]any)
	if code != 200 || len(nodes) != 1 || m["next_cursor"] != "" {
		t.Fatalf("nodes page 3: %d %v", code, m)
	}
	if n, _ := nodes[0].(map[string]any); n["id"] != "r.1" || n["h"] != nil || n["f"] != nil {
		t.Fatalf("the pruned node %v; want r.1 with h and f null", n)
	} else if _, has := n["h"]; !has {
		t.Fatalf("the pruned node %v has no h", n)
	}
	if code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?cursor=zzz", nil); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), "cursor") {
		t.Fatalf("a cursor that is no node: %d %v; want 400 naming cursor", code, m)
	}
	if code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes?limit=0", nil); code != 400 {
		t.Fatalf("limit 0: %d %v", code, m)
	}
	// a page is bounded in bytes too: with a bound below one node, each
	// page holds one node and goes on from it (only the count was bounded)
	old := httpapi.SearchNodesPageBytes
	httpapi.SearchNodesPageBytes = 1
	code, m = call(t, base, "tok-a", "GET", "/v1/searches/s%2F1/nodes", nil)
	httpapi.SearchNodesPageBytes = old
	if nodes, _ := m["nodes"].([]any); code != 200 || len(nodes) != 1 || m["next_cursor"] != "r" {
		t.Fatalf("nodes with a 1-byte page bound: %d %v; want one node and next_cursor r", code, m)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "maybe"}); code != 400 {
		t.Fatalf("bad decision: %d %v", code, m)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "reject", "note": "no"}); code != 202 {
		t.Fatalf("resume: %d %v", code, m)
	}
	key := events.EntityKey("project:a", "s/1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, _, _ := treesearch.Get(p.Store, key)
		if s.Status == treesearch.StatusRunning {
			if len(s.Decisions) != 1 || s.Decisions[0].By != "token:a" || len(s.Open) != 0 {
				t.Fatalf("after resume %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not resumed: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, m = call(t, base, "tok-a", "POST", "/v1/searches/s%2F1/resume", map[string]any{"decision": "approve"}); code != 409 {
		t.Fatalf("resume a running search: %d %v", code, m)
	}
	// project:b's search of the same id is still paused
	if code, m = call(t, base, "tok-b", "GET", "/v1/searches/s%2F1", nil); code != 200 || m["status"] != treesearch.StatusPaused {
		t.Fatalf("project:b: %d %v", code, m)
	}
}

// askOnce asks a human about the first child of the root that the
// arithmetic evaluator scores 1 (the head of the open set after the first
// expansion), and about nothing else: verdicts otherwise equal
// game24.Arithmetic's, under its component name, so the search records the
// built-in components the resume worker can drive.
type askOnce struct {
	game24.Arithmetic
	mu    sync.Mutex
	asked bool
}

func (a *askOnce) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, err := a.Arithmetic.Evaluate(ctx, req)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(req.Path) == 1 && v.Score == 1 && !a.asked {
		a.asked, v.NeedsHuman = true, true
	}
	return v, err
}

// A search that paused for a human completes inside the running pipeline
// once POST /v1/searches/{id}/resume approves the node (the resume worker
// drives it, nobody else does), with the result of an uninterrupted run of
// the same puzzle.
func TestResumeContinuesSearchInServe(t *testing.T) {
	p, _, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	puzzle := "4 5 6 10"
	run := func(id string, e treesearch.Evaluator) (string, treesearch.Search, error) {
		r, err := treesearch.NewRunner(p.Store, p.Producer, game24.Arithmetic{}, e)
		if err != nil {
			t.Fatal(err)
		}
		key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: id, Goal: game24.Goal(puzzle), RootState: puzzle, Config: game24.Config(5)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(ctx, key)
		return key, s, err
	}
	_, plain, err := run("plain", game24.Arithmetic{})
	if err != nil || plain.Outcome != events.SearchSolved {
		t.Fatalf("uninterrupted run: %v %+v", err, plain)
	}
	key, s, err := run("gated", &askOnce{})
	if !errors.Is(err, treesearch.ErrPaused) || s.Status != treesearch.StatusPaused {
		t.Fatalf("want a pause, got %v %+v", err, s)
	}
	if code, m := call(t, base, "tok-b", "POST", "/v1/searches/gated/resume", map[string]any{"decision": "approve"}); code != 404 {
		t.Fatalf("resume from another scope: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/searches/gated/resume", map[string]any{"decision": "approve", "note": "fine"}); code != 202 {
		t.Fatalf("resume: %d %v", code, m)
	}
	for s.Status != treesearch.StatusCompleted {
		select {
		case <-ctx.Done():
			t.Fatalf("the search did not complete after the resume: %+v", s)
		case <-time.After(20 * time.Millisecond):
		}
		s, _, _ = treesearch.Get(p.Store, key)
	}
	if s.Outcome != plain.Outcome || s.Answer != plain.Answer || !slices.Equal(s.Path, plain.Path) || s.Expansions != plain.Expansions ||
		s.Counts != plain.Counts || s.Quota != plain.Quota || len(s.Decisions) != 1 || s.Decisions[0].Decision != "approve" {
		t.Fatalf("resumed search:\n%+v\nuninterrupted:\n%+v", s, plain)
	}
}

// A rejected resume is driven too: POST /v1/searches/{id}/resume with
// decision reject prunes the paused node (status rejected, never expanded)
// and the resume worker goes on with the rest of the frontier inside the
// running pipeline — beam 5: the search still solves the puzzle on
// another branch; beam 1: the rejected node was the whole frontier, so the
// search completes as exhausted (search.completed.v1).
func TestRejectContinuesSearchInServe(t *testing.T) {
	p, _, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	puzzle := "4 5 6 10"
	for _, c := range []struct {
		id      string
		beam    int
		outcome string
	}{{"reject-beam5", 5, events.SearchSolved}, {"reject-beam1", 1, events.SearchExhausted}} {
		r, err := treesearch.NewRunner(p.Store, p.Producer, game24.Arithmetic{}, &askOnce{})
		if err != nil {
			t.Fatal(err)
		}
		key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: c.id, Goal: game24.Goal(puzzle), RootState: puzzle, Config: game24.Config(c.beam)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(ctx, key)
		if !errors.Is(err, treesearch.ErrPaused) {
			t.Fatalf("%s: want a pause, got %v %+v", c.id, err, s)
		}
		paused := s.PausedAt
		if code, m := call(t, base, "tok-a", "POST", "/v1/searches/"+c.id+"/resume", map[string]any{"decision": "reject", "note": "not this one"}); code != 202 {
			t.Fatalf("%s: resume: %d %v", c.id, code, m)
		}
		for s.Status != treesearch.StatusCompleted {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the search did not complete after the rejection: %+v", c.id, s)
			case <-time.After(20 * time.Millisecond):
			}
			s, _, _ = treesearch.Get(p.Store, key)
		}
		n, _, _ := treesearch.GetNode(p.Store, key, paused)
		if s.Outcome != c.outcome || len(s.Decisions) != 1 || s.Decisions[0].Decision != "reject" || s.Decisions[0].NodeID != paused ||
			n.Status != treesearch.NodeRejected || slices.Contains(s.Path, paused) {
			t.Fatalf("%s: after the rejection of %s (node %+v): %+v", c.id, paused, n, s)
		}
		if c.outcome == events.SearchSolved && (s.Answer == "" || s.Expansions < 2) {
			t.Fatalf("%s: solved without an answer or another expansion: %+v", c.id, s)
		}
		// the HTTP view agrees
		if code, m := call(t, base, "tok-a", "GET", "/v1/searches/"+c.id, nil); code != 200 || m["status"] != treesearch.StatusCompleted || m["outcome"] != c.outcome {
			t.Fatalf("%s: GET: %d %v", c.id, code, m)
		}
	}
}

// GET /v1/searches/{id}/panel shows a consensus panel: its branches in
// log order and the reducer's decision the processor checked; the same id
// in another scope is not readable with a token of one scope, and an
// unknown panel is a 404.
func TestPanelRoute(t *testing.T) {
	p, _, base := scopedServer(t)
	one, two := 1.0, 0.0
	evs := []struct {
		typ  events.Type
		data any
	}{
		{events.SearchBranchCompleted, events.SearchBranchData{SearchID: "pan/1", BranchID: "b0", Output: "(4+8)*2", Answer: "(4+8)*2", Score: &one}},
		{events.SearchBranchCompleted, events.SearchBranchData{SearchID: "pan/1", BranchID: "b1", Output: "4*8-2", Answer: "4*8-2", Score: &two}},
		{events.SearchBranchCompleted, events.SearchBranchData{SearchID: "pan/1", BranchID: "b2", Output: "(4+8)*2", Answer: "(4+8)*2", Score: &one}},
		{events.SearchConsensusReduced, events.SearchConsensusData{SearchID: "pan/1", Reducer: events.ReducerMajorityVote, Winner: "b0", Output: "(4+8)*2", Votes: 2, Branches: 3}},
	}
	var batch []events.Envelope
	for i, e := range evs {
		env, err := events.New(e.typ, "paneltest", fmt.Sprintf("pan-%d", i), time.Now(), e.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		batch = append(batch, env)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", batch); code != 202 {
		t.Fatalf("seed: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "GET", "/v1/searches/pan%2F1/panel", nil)
	bs, _ := m["branches"].([]any)
	rs, _ := m["reductions"].([]any)
	if code != 200 || m["id"] != "pan/1" || m["scope"] != "project:a" || len(bs) != 3 || len(rs) != 1 {
		t.Fatalf("GET panel: %d %v", code, m)
	}
	if b1, _ := bs[1].(map[string]any); b1["id"] != "b1" || b1["output"] != "4*8-2" {
		t.Fatalf("second branch: %v", bs[1])
	}
	if r0, _ := rs[0].(map[string]any); r0["winner"] != "b0" || r0["votes"].(float64) != 2 {
		t.Fatalf("reduction: %v", rs[0])
	}
	if code, m = call(t, base, "tok-b", "GET", "/v1/searches/pan%2F1/panel", nil); code != 404 {
		t.Fatalf("another scope's token: %d %v", code, m)
	}
	if code, m = call(t, base, "tok-a", "GET", "/v1/searches/nope/panel", nil); code != 404 || !strings.Contains(fmt.Sprint(m["error"]), "consensus panel's search_id") {
		t.Fatalf("unknown panel: %d %v; want a 404 saying what a panel is", code, m)
	}
	// a Beam-A* search's id: the 404 says where it is read (it pointed to
	// the dead letters, where there was nothing: a walkthrough)
	started, err := events.New(events.SearchStarted, "paneltest", "beam-1", time.Now(), events.SearchStartedData{SearchID: "beam", Goal: "g", RootState: "1 2 3 4",
		Config:   events.SearchConfig{BeamWidth: 1, K: 1, MaxDepth: 1},
		Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	started.Scope = "project:a"
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{started}); code != 202 {
		t.Fatalf("seed the search: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	if code, m = call(t, base, "tok-a", "GET", "/v1/searches/beam/panel", nil); code != 404 || !strings.Contains(fmt.Sprint(m["error"]), "is a Beam-A* search, read at GET /v1/searches/{id}") {
		t.Fatalf("a Beam-A* search's panel: %d %v; want a 404 naming the search route", code, m)
	}
}

// Concurrent resumes of one pause: one is written and answered 202, the
// ones with another decision 409 (the search moved on), and a repeat of
// the one applied is its retry, 202 again while the search is still at
// the pause (409 once the resume worker drove it on). Found by a new user's walkthrough: all
// four concurrent requests answered 202 while only the first decision was
// applied and the others were dead-lettered as conflicting duplicates.
func TestConcurrentResumesOneWins(t *testing.T) {
	p, _, base := scopedServer(t)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "race", "x")); code != 202 {
		t.Fatalf("seed: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	decisions := []string{"approve", "reject", "approve", "reject"}
	codes := make([]int, len(decisions))
	var wg sync.WaitGroup
	for i, d := range decisions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = call(t, base, "tok-a", "POST", "/v1/searches/race/resume", map[string]any{"decision": d})
		}()
	}
	wg.Wait()
	// the first applied wins; an identical request is its retry (202),
	// another decision is refused (409)
	won := slices.Index(codes, 202)
	if won < 0 {
		t.Fatalf("codes %v; want a 202", codes)
	}
	for i, c := range codes {
		// a repeat of the winner is its retry (202), also once the
		// search moved on (resumeRetry)
		if ok := c == 409 && decisions[i] != decisions[won] || c == 202 && decisions[i] == decisions[won]; !ok {
			t.Fatalf("codes %v for %v; want 202 only for the %s that won (and its repeats), 409 for the others", codes, decisions, decisions[won])
		}
	}
	s, _, _ := treesearch.Get(p.Store, events.EntityKey("project:a", "race"))
	if len(s.Decisions) != 1 || s.Decisions[0].Decision != decisions[won] {
		t.Fatalf("decisions %+v; want the one answered 202, %s", s.Decisions, decisions[won])
	}
}

// A resume's answer names who runs the search on (driver): the resume
// worker for a search of the built-in components, "external" for one of
// the caller's own, which nothing in serve moves (before, both answers
// were alike, and a person approving an integrator's search read a 202
// while the search sat running until the integrator's runtime noticed; a
// tree-search walkthrough, 2026-12-07). A retry's answer names it too.
func TestResumeAnswerNamesTheDriver(t *testing.T) {
	p, _, base := scopedServer(t)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "own", "x")); code != 202 {
		t.Fatalf("seed: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	body := map[string]any{"decision": "approve", "note": "ok"}
	for _, attempt := range []string{"resume", "retry"} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/searches/own/resume", body); code != 202 || m["driver"] != httpapi.DriverExternal {
			t.Fatalf("%s of a search of the caller's components: %d %v, want 202 driver %q", attempt, code, m, httpapi.DriverExternal)
		}
		waitCaughtUp(t, p)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	r, err := treesearch.NewRunner(p.Store, p.Producer, game24.Arithmetic{}, &askOnce{})
	if err != nil {
		t.Fatal(err)
	}
	puzzle := "4 5 6 10"
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: "builtin", Goal: game24.Goal(puzzle), RootState: puzzle, Config: game24.Config(5)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, key); !errors.Is(err, treesearch.ErrPaused) {
		t.Fatalf("want a pause, got %v", err)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/searches/builtin/resume", body); code != 202 || m["driver"] != httpapi.DriverResumeWorker {
		t.Fatalf("resume of a search of the built-in components: %d %v, want 202 driver %q", code, m, httpapi.DriverResumeWorker)
	}
}

// A retry of a resume that moved the search on (its first answer lost) is
// answered 202 with the first answer, and writes nothing; the same
// decision with another note, or another decision, is a 409. Before, the
// retry was a 409 "not paused" (found by a walkthrough).
func TestResumeRetryAfterTheSearchMovedOn(t *testing.T) {
	p, _, base := scopedServer(t)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "late", "x")); code != 202 {
		t.Fatalf("seed: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	body := map[string]any{"decision": "approve", "note": "ok"}
	code, first := call(t, base, "tok-a", "POST", "/v1/searches/late/resume", body)
	if code != 202 {
		t.Fatalf("resume: %d %v", code, first)
	}
	waitCaughtUp(t, p)
	key := events.EntityKey("project:a", "late")
	if s, _, _ := treesearch.Get(p.Store, key); s.Status == treesearch.StatusPaused {
		t.Fatalf("still paused after the resume: %+v", s)
	}
	code, again := call(t, base, "tok-a", "POST", "/v1/searches/late/resume", body)
	if code != 202 || !reflect.DeepEqual(again, first) {
		t.Fatalf("retry: %d %v, want 202 %v", code, again, first)
	}
	for _, other := range []map[string]any{
		{"decision": "approve", "note": "changed my mind"},
		{"decision": "reject", "note": "ok"},
	} {
		if code, m := call(t, base, "tok-a", "POST", "/v1/searches/late/resume", other); code != 409 {
			t.Fatalf("%v after the search moved on: %d %v, want 409", other, code, m)
		}
	}
	waitCaughtUp(t, p)
	if s, _, _ := treesearch.Get(p.Store, key); len(s.Decisions) != 1 {
		t.Fatalf("decisions %+v, want the first only", s.Decisions)
	}
	// another scope's token does not see the search at all
	if code, _ := call(t, base, "tok-b", "POST", "/v1/searches/late/resume", body); code != 404 {
		t.Fatalf("another scope's retry: %d, want 404", code)
	}
}
