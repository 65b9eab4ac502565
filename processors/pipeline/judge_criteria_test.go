package pipeline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// chatServer is an OpenAI-compatible chat endpoint answering each request
// with answer(its user message); an answer of "" is a 503.
func chatServer(t *testing.T, answer func(prompt string) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		a := answer(req.Messages[0].Content)
		if a == "" {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": a}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// waitAllJudged waits until the evaluation of the session key lists no
// unevaluated criterion and the pipeline is caught up.
func waitAllJudged(ctx context.Context, t *testing.T, p *pipeline.Pipeline, key string) sessions.View {
	t.Helper()
	for {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatalf("the judge criteria were never all scored: %v", err)
		}
		if v, _, _ := sessions.Get(p.Store, key); v.Evaluation != nil && len(v.Evaluation.Unevaluated) == 0 {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A session with two judge criteria has each judged once: the model is
// asked once per criterion (critic and judge), and the evaluation ends at
// revision 2, one per answer. Before, each answer's revision still listed
// the other criterion, which was judged again from it.
func TestEachJudgeCriterionIsJudgedOnce(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{} // "critic tone", "judge clarity", …
	srv := chatServer(t, func(prompt string) string {
		criterion := "tone"
		if strings.Contains(prompt, "concise") {
			criterion = "clarity"
		}
		var role, answer string
		switch {
		case strings.HasPrefix(prompt, "You are a critic"):
			role, answer = "critic", "NO_FLAWS"
		case strings.HasPrefix(prompt, "You are a judge"):
			role, answer = "judge", "- [x] polite\n- [x] apologised"
			if criterion == "clarity" {
				answer = "- [x] concise"
			}
		default:
			return "NO_EXTRACTIONS"
		}
		mu.Lock()
		calls[role+" "+criterion]++
		mu.Unlock()
		return answer
	})
	envs := judgedSession(t)
	var start events.SessionStartedData
	if err := envs[0].Decode(&start); err != nil {
		t.Fatal(err)
	}
	start.SuccessCriteria = append(start.SuccessCriteria, events.Criterion{ID: "clarity", Description: "clarity", Weight: 1,
		Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"concise"}}})
	first, err := events.New(events.SessionStarted, envs[0].Source, envs[0].ID, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), start)
	if err != nil {
		t.Fatal(err)
	}
	first.SessionID, first.Scope = envs[0].SessionID, envs[0].Scope
	envs[0] = first
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startJudged(ctx, t, srv.URL, envs...)
	key := events.EntityKey("project:a", "judged-1")
	waitAllJudged(ctx, t, p, key)
	time.Sleep(time.Second) // a second judging would come after: give it the time to
	v := waitAllJudged(ctx, t, p, key)
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []string{"critic tone", "judge tone", "critic clarity", "judge clarity"} {
		if calls[c] != 1 {
			t.Errorf("%s: %d calls, want 1 (all: %v)", c, calls[c], calls)
		}
	}
	if v.Evaluation.Revision != 2 {
		t.Errorf("evaluation at revision %d, want 2 (one per judge answer)", v.Evaluation.Revision)
	}
}

// A criterion whose model call failed is asked again when its dead-lettered
// evaluation is redriven: the worker remembers only the questions it
// published answers for.
func TestJudgeAsksAgainOnRedrive(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	srv := chatServer(t, func(prompt string) string {
		switch {
		case failing.Load():
			return ""
		case strings.HasPrefix(prompt, "You are a critic"):
			return "NO_FLAWS"
		case strings.HasPrefix(prompt, "You are a judge"):
			return "- [x] polite\n- [x] apologised"
		}
		return "NO_EXTRACTIONS"
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startJudged(ctx, t, srv.URL)
	brokers := p.Broker.Addrs()
	var letter []deadletter.Letter
	for letter == nil {
		ls, err := deadletter.List(ctx, brokers)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if strings.HasPrefix(l.Handler, "judge@") {
				letter = []deadletter.Letter{l}
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the judge's evaluation was never dead-lettered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	failing.Store(false)
	if _, err := deadletter.Redrive(ctx, brokers, letter); err != nil {
		t.Fatal(err)
	}
	waitAllJudged(ctx, t, p, events.EntityKey("project:a", "judged-1"))
}
