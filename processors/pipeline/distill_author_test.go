package pipeline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// The LLM distiller carries the session's recorded_by (who started it)
// into distillation.completed.v1, so the memory it yields names that
// caller as its author, and its merges from other sessions of the caller
// are one author's usages (memories.usageAuthors), as on the deterministic
// path.
func TestLLMDistillationCarriesTheSessionsWriter(t *testing.T) {
	const answer = "## Memory 1\n**Title**: Refund after checking the order\n**Description**: Check the order, then refund.\n**Content**: Read the order, then issue the refund the user asked for.\n**Outcome**: success\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	t.Cleanup(func() { _ = p.Close() })
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mk := func(typ events.Type, n int, data any) events.Envelope {
		e, err := events.New(typ, "test/distill", "da-"+string(rune('a'+n)), at.Add(time.Duration(n)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		e.SessionID, e.Scope = "refund-1", "project:a"
		return e
	}
	err = p.Producer.Publish(ctx,
		mk(events.SessionStarted, 0, events.SessionStartedData{OriginalTask: "Refund order 7", RecordedBy: "token:alice", SuccessCriteria: []events.Criterion{
			{ID: "refund", Description: "refund issued", Weight: 1, Check: events.Check{Kind: "tool_call", Name: "refund", Arguments: json.RawMessage(`{"order":7}`)}},
		}}),
		mk(events.WorkflowTaskCompleted, 1, events.TaskCompletedData{WorkflowID: "refund-1", TaskID: "c1", ToolID: "refund", Inputs: json.RawMessage(`{"order":7}`), Success: true}),
		mk(events.SessionCompleted, 2, events.SessionCompletedData{Output: "Refunded.", Outcome: "success"}))
	if err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey("project:a", distill.MemoryID("project:a", "Refund after checking the order", "Read the order, then issue the refund the user asked for."))
	for {
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		changes, _, err := memories.History(p.Store, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) > 0 {
			if changes[0].Author != "token:alice" {
				t.Fatalf("the distilled memory's author: %q, want the session's writer token:alice", changes[0].Author)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatal("no memory distilled by the model")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
