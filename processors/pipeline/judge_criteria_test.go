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
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// A session with two judge criteria has each judged once: the model is
// asked once per criterion (critic and judge), and the evaluation ends at
// revision 2, one per answer.
func TestEachJudgeCriterionIsJudgedOnce(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{} // "critic tone", "judge clarity", …
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		prompt := req.Messages[0].Content
		answer := "NO_EXTRACTIONS"
		criterion := "tone"
		if strings.Contains(prompt, "- [ ] concise") || strings.Contains(prompt, "- concise") {
			criterion = "clarity"
		}
		switch {
		case strings.HasPrefix(prompt, "You are a critic"):
			answer = "NO_FLAWS"
			mu.Lock()
			calls["critic "+criterion]++
			mu.Unlock()
		case strings.HasPrefix(prompt, "You are a judge"):
			answer = "- [x] polite\n- [x] apologised"
			if criterion == "clarity" {
				answer = "- [x] concise"
			}
			mu.Lock()
			calls["judge "+criterion]++
			mu.Unlock()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": answer}}}})
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0",
		LLM: &distill.LLMConfig{URL: srv.URL, Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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
	if err := p.Producer.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey("project:a", "judged-1")
	for {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := sessions.Get(p.Store, key); v.Evaluation != nil && len(v.Evaluation.Unevaluated) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the judge criteria were never both scored")
		}
	}
	// a second judging would come after: give it the time to
	time.Sleep(time.Second)
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v, _, _ := sessions.Get(p.Store, key)
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		answer := "NO_EXTRACTIONS"
		switch prompt := req.Messages[0].Content; {
		case strings.HasPrefix(prompt, "You are a critic"):
			answer = "NO_FLAWS"
		case strings.HasPrefix(prompt, "You are a judge"):
			answer = "- [x] polite\n- [x] apologised"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": answer}}}})
	}))
	defer srv.Close()
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
	key := events.EntityKey("project:a", "judged-1")
	for {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := sessions.Get(p.Store, key); v.Evaluation != nil && len(v.Evaluation.Unevaluated) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the redriven evaluation's judge criterion was never scored")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
