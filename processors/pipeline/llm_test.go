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
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

const modelAnswer = `## Memory 1
**Title**: Confirm the exact flight change first
**Description**: Use when a user changes flights: list the new flights and price, get a yes, then call update_reservation_flights once.
**Content**: 1. get_reservation_details 2. search_direct_flight 3. confirm 4. update_reservation_flights
**Tags**: flights, confirmation
**Outcome**: success
`

// fakeLLM speaks the OpenAI chat-completions API on loopback.
func fakeLLM(t *testing.T, status *atomic.Int32, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model       string  `json:"model"`
			Temperature float64 `json:"temperature"`
			Messages    []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Temperature != 0 ||
			!strings.Contains(req.Messages[0].Content, "Session Trace:") {
			http.Error(w, "bad request", 400)
			return
		}
		if s := status.Load(); s != 200 {
			http.Error(w, "overloaded", int(s))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": modelAnswer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func startLLM(t *testing.T, url string) *pipeline.Pipeline {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0",
		LLM: &distill.LLMConfig{URL: url + "/v1", Model: "test-model", InitialBackoff: time.Millisecond, RatePerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestLLMDistillationReplaysFromTheLog(t *testing.T) {
	var status, calls atomic.Int32
	status.Store(200)
	srv := fakeLLM(t, &status, &calls)
	p := startLLM(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, envs := range sampleEvents(t, 2) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Fatalf("model called %d times for 2 sessions", calls.Load())
	}
	st, err := memories.ComputeStats(p.Store)
	if err != nil || st.Memories != 1 || st.DuplicatesMerged != 1 || st.SessionsWithMemory != 2 {
		t.Fatalf("memories from the model's answer: %+v %v", st, err)
	}
	var mem memories.Memory
	_ = memories.Each(p.Store, func(m memories.Memory) bool { mem = m; return false })
	if mem.Source != "distilled" || mem.Confidence != distill.InitialDistilledSuccess || !strings.HasPrefix(mem.Title, "Confirm the exact flight") {
		t.Fatalf("memory %+v", mem)
	}
	srv.Close() // replay must not need the model
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: p.Processors}); err != nil {
		t.Fatal(err)
	}
	if d, err := projections.Diff(p.Store, rep); err != nil || d != nil {
		t.Fatalf("replay without the model differs: %v %v", d, err)
	}
	if calls.Load() != 2 {
		t.Fatal("replay called the model")
	}
}

func TestLLMFailureGoesToDeadLetter(t *testing.T) {
	var status, calls atomic.Int32
	status.Store(503)
	srv := fakeLLM(t, &status, &calls)
	p := startLLM(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess := sampleEvents(t, 2)
	if err := p.Producer.Publish(ctx, sess[0]...); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicDeadLetter)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())) // as Chronicle's consumers read: an aborted transaction's copy is not in the log
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := cl.PollFetches(ctx).Records()
	if len(recs) != 1 {
		t.Fatalf("dead-letter records %d", len(recs))
	}
	var reason string
	for _, h := range recs[0].Headers {
		if h.Key == processors.HeaderError {
			reason = string(h.Value)
		}
	}
	if !strings.Contains(reason, "503") || !strings.Contains(reason, "after 3 attempts") || calls.Load() != 3 {
		t.Fatalf("reason %q after %d calls", reason, calls.Load())
	}
	// the pipeline goes on: the model recovers, the next session is distilled
	status.Store(200)
	if err := p.Producer.Publish(ctx, sess[1]...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := memories.ComputeStats(p.Store)
	if st.Memories != 1 || st.SessionsWithMemory != 1 {
		t.Fatalf("after recovery: %+v", st)
	}
}
