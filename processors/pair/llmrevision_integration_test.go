package pair_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// The LLM revision on a running Chronicle with an LLM configured (what
// serve --llm-url does): the pair revision worker runs, answers the
// failed session's context through a local OpenAI-compatible server that
// replies with a recorded Reflexion reflection, the answer lands in the
// log and in the pairloop projection; a replay of the log with the server
// gone rebuilds the projection bit for bit. The server answers only the
// revision prompt (400 to the distiller's: not what this test is about).
func TestPipelineLLMRevision(t *testing.T) {
	sc := getScenario(t)
	var answer string
	for _, r := range reflections(t) {
		if strings.Contains(r, "I should have") {
			answer = r
			break
		}
	}
	var revisionCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 1 || !strings.HasPrefix(req.Messages[0].Content, "You are a fresh agent reviewing") {
			http.Error(w, "only the PAIR revision prompt is served here", http.StatusBadRequest)
			return
		}
		revisionCalls.Add(1)
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": answer}}}})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logs := newCaptureLogger()
	defer logs.reportRetries(t)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2, Embedder: sharedEmbedder(t), PAIR: true, Logger: logs,
		LLM: &distill.LLMConfig{URL: srv.URL + "/v1", Model: "reflexion-gpt-recorded", APIKeyEnv: "PAIR_TEST_NO_KEY", RatePerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if !slices.ContainsFunc(p.Workers, func(w processors.Worker) bool { return w.Name() == "pair-revision" }) {
		t.Fatal("pipeline.Start with PAIR and an LLM runs no pair revision worker")
	}
	for _, envs := range append(sc.others, sc.good, sc.failed) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	key := events.EntityKey(sc.failed[0].EffectiveScope(), sc.failedID)
	var st pair.LoopState
	for deadline := time.Now().Add(90 * time.Second); ; {
		var ok bool
		if st, ok, err = pair.GetLoop(p.Store, key); err != nil {
			t.Fatal(err)
		}
		if ok && st.LLMRevision != nil {
			break
		}
		if time.Now().After(deadline) {
			// what every processor and worker still had to read, to tell a
			// stalled consumer from a slow one
			t.Fatalf("no LLM revision: %+v; %d revision calls; %s; %s; the pipeline's log:\n%s", st, revisionCalls.Load(), behind(ctx, p), logTypes(ctx, t, p, events.TopicLearned), logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lr := st.LLMRevision; lr.Source != pair.SourceLLM || lr.Rationale != answer || len(lr.RevisedDecisions) == 0 || st.Revision == nil || st.Status != pair.LoopRevisionReady {
		t.Fatalf("state %+v, llm revision %+v", st, lr)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := revisionCalls.Load(); n != 1 {
		t.Fatalf("%d revision calls, want 1", n)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: []processors.Processor{pair.Loop{}}}); err != nil {
		t.Fatal(err)
	}
	rd, _ := rep.Digest()
	if rd.Projections[pair.LoopName] != live.Projections[pair.LoopName] {
		t.Fatalf("pairloop: live %s, replay %s", live.Projections[pair.LoopName], rd.Projections[pair.LoopName])
	}
	if got, _, _ := pair.GetLoop(rep, key); got.LLMRevision == nil || got.LLMRevision.EventID != st.LLMRevision.EventID {
		t.Fatalf("replayed llm revision %+v", got.LLMRevision)
	}
}
