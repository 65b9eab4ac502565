package pipeline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/twmb/franz-go/pkg/kgo"
)

func judgedSession(t *testing.T) []events.Envelope {
	t.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mk := func(typ events.Type, n int, data any) events.Envelope {
		e, err := events.New(typ, "test/judge", "j-"+string(rune('a'+n)), at.Add(time.Duration(n)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		e.SessionID, e.Scope = "judged-1", "project:a"
		return e
	}
	return []events.Envelope{
		mk(events.SessionStarted, 0, events.SessionStartedData{OriginalTask: "Refund order 7", SuccessCriteria: []events.Criterion{
			{ID: "refund", Description: "refund issued", Weight: 1, Check: events.Check{Kind: "tool_call", Name: "refund", Arguments: json.RawMessage(`{"order":7}`)}},
			{ID: "tone", Description: "tone", Weight: 1, Check: events.Check{Kind: "judge", Rubric: []string{"polite", "apologised"}}},
		}}),
		mk(events.WorkflowTaskCompleted, 1, events.TaskCompletedData{WorkflowID: "judged-1", TaskID: "c1", ToolID: "refund", Inputs: json.RawMessage(`{"order":7}`), Success: true}),
		mk(events.SessionCompleted, 2, events.SessionCompletedData{Output: "Refunded.", Outcome: "success"}),
	}
}

// startJudged starts a pipeline whose model endpoint is url (model "m")
// and publishes envs into it, judgedSession when none are given; the
// pipeline closes with the test.
func startJudged(ctx context.Context, t *testing.T, url string, envs ...events.Envelope) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0",
		LLM: &distill.LLMConfig{URL: url, Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if len(envs) == 0 {
		envs = judgedSession(t)
	}
	if err := p.Producer.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	return p
}

// The critic–judge loop scores the judge criterion as the share of passed
// checks (1 of 2 → 50); objective checks weigh twice as much: composite =
// (100·1 + 50·0.5) / (1 + 0.5) = 83.33 → needs_improvement.
func TestJudgeScoresRubric(t *testing.T) {
	var critic, judged atomic.Int32
	srv := chatServer(t, func(prompt string) string {
		switch {
		case strings.HasPrefix(prompt, "You are a critic"):
			critic.Add(1)
			return "- the agent never apologised for the delay"
		case strings.HasPrefix(prompt, "You are a judge"):
			judged.Add(1)
			if !strings.Contains(prompt, "never apologised") {
				return "the critic's report is missing"
			}
			return "- [x] polite\n- [ ] apologised"
		}
		return "NO_EXTRACTIONS"
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startJudged(ctx, t, srv.URL)
	var v sessions.View
	for {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		v, _, _ = sessions.Get(p.Store, events.EntityKey("project:a", "judged-1"))
		if v.Evaluation != nil && v.Evaluation.Revision == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no judged revision: %+v", v.Evaluation)
		}
	}
	ev := v.Evaluation
	if ev.Composite != 83.33 || ev.Recommendation != events.NeedsImprovement || len(ev.Unevaluated) != 0 || critic.Load() != 1 || judged.Load() != 1 {
		t.Fatalf("evaluation %+v (critic %d, judge %d calls)", ev, critic.Load(), judged.Load())
	}
	if len(ev.Gaps) != 1 || ev.Gaps[0].CriterionID != "tone" || !strings.Contains(ev.Gaps[0].Detail, "failed: apologised") {
		t.Fatalf("gaps %+v", ev.Gaps)
	}
}

// Without an LLM the judge criterion stays unevaluated and says so.
func TestJudgeUnevaluatedWithoutLLM(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Producer.Publish(ctx, judgedSession(t)...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v, _, _ := sessions.Get(p.Store, events.EntityKey("project:a", "judged-1"))
	ev := v.Evaluation
	if ev == nil || ev.Composite != 100 || len(ev.Unevaluated) != 1 || ev.Unevaluated[0] != "tone" || !strings.Contains(ev.Criteria[1].Detail, "no judge answer") {
		t.Fatalf("evaluation %+v", ev)
	}
}

// When the model endpoint fails, the judge's and the distiller's dead
// letters each name their worker, the session and (the judge's) the
// criterion and call; the judge's used to read "distill: m after 3
// attempts: …", the model client's own prefix.
func TestJudgeFailureNamesTheJudge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	reasons := workerDeadLetters(t, srv.URL)
	if r := reasons["judge"]; !strings.HasPrefix(r, "judge: session judged-1, criterion tone: critic: model m after 3 attempts: ") || !strings.Contains(r, "503") {
		t.Errorf("judge's dead letter: %q (all: %v)", r, reasons)
	}
	if r := reasons["distiller"]; !strings.HasPrefix(r, "distiller: session judged-1: model m after 3 attempts: ") {
		t.Errorf("distiller's dead letter: %q (all: %v)", r, reasons)
	}
}

// A model answer too large for one event is dead-lettered with a reason
// naming the worker, the session and the model, as a failed call's; it
// read "event: /: 2000717 bytes encoded, above the 983040-byte limit of
// one event", naming none of them.
func TestAnswerTooLargeNamesTheWorker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"content": "NO_EXTRACTIONS " + strings.Repeat("x", 2<<20)}}}})
		w.Write(b)
	}))
	defer srv.Close()
	reasons := workerDeadLetters(t, srv.URL)
	if r := reasons["judge"]; !strings.HasPrefix(r, "judge: session judged-1, criterion tone: model m: answers of ") || !strings.Contains(r, "above the 983040-byte limit") {
		t.Errorf("judge's dead letter: %q (all: %v)", r, reasons)
	}
	if r := reasons["distiller"]; !strings.HasPrefix(r, "distiller: session judged-1: model m: answer of ") || !strings.Contains(r, "above the 983040-byte limit") {
		t.Errorf("distiller's dead letter: %q (all: %v)", r, reasons)
	}
}

// workerDeadLetters runs judgedSession against the model at url and
// returns the first two dead letters' reasons by their first word.
func workerDeadLetters(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startJudged(ctx, t, url)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicDeadLetter)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())) // as Chronicle's consumers read: an aborted transaction's copy is not in the log
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reasons := map[string]string{} // worker prefix → reason
	for len(reasons) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("dead letters so far: %v", reasons)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == processors.HeaderError {
					reasons[strings.SplitN(string(h.Value), ":", 2)[0]] = string(h.Value)
				}
			}
		})
	}
	return reasons
}
