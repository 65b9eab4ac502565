package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// A running Chronicle in-process, on the embedded broker: publish a
// session (its start with success criteria, a tool call, its completion)
// and read its evaluation back from the sessions projection once the
// processors applied it. Only the sessions processor runs here (the
// default is DefaultProcessors()), and no embedding model is loaded: this
// example searches no memories, and the default model (USE lite, 24 MB)
// takes 0.3 s to load, 3 s under the race detector.
func ExampleStart() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0",
		Processors: []processors.Processor{sessions.Processor{}}, Embedder: noEmbedder{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	start, _ := events.New(events.SessionStarted, "agent/demo", "s1-start", at, events.SessionStartedData{
		OriginalTask: "refund order 42",
		SuccessCriteria: []events.Criterion{
			{ID: "refund", Description: "order 42 refunded", Weight: 2,
				Check: events.Check{Kind: events.CheckToolCall, Name: "refund", Arguments: json.RawMessage(`{"order":42}`)}},
			{ID: "says", Description: "tells the user", Weight: 1,
				Check: events.Check{Kind: events.CheckOutputContains, Text: "refunded"}},
		},
	})
	call, _ := events.New(events.WorkflowTaskCompleted, "agent/demo", "s1-call-1", at.Add(time.Second), events.TaskCompletedData{
		WorkflowID: "s1", TaskID: "call-1", ToolID: "refund", Inputs: json.RawMessage(`{"order":42}`), Success: true})
	done, _ := events.New(events.SessionCompleted, "agent/demo", "s1-done", at.Add(2*time.Second),
		events.SessionCompletedData{Output: "I could not do it", Outcome: events.OutcomeFailure})
	session := []events.Envelope{start, call, done}
	for i := range session {
		session[i].SessionID = "s1"
	}
	if err := p.Producer.Publish(ctx, session...); err != nil {
		fmt.Println(err)
		return
	}

	// The evaluation is written by the sessions processor shortly after:
	// WaitCaughtUp returns once every processor consumed the log to its end
	// (a test's wait; bound it with ctx). sessions.Get takes the session's
	// entity key (scope "/" id).
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.WaitCaughtUp(wctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	v, ok, err := sessions.Get(p.Store, events.EntityKey(events.DefaultScope, "s1"))
	if err != nil || !ok || v.Evaluation == nil {
		fmt.Println("no evaluation:", ok, err)
		return
	}
	e := v.Evaluation
	fmt.Printf("%s: composite %.1f, %s\n", v.Status, e.Composite, e.Recommendation)
	for _, c := range e.Criteria {
		fmt.Printf("  %s: %.0f\n", c.ID, *c.Score)
	}
	// Output:
	// completed: composite 66.7, significant_gaps
	//   refund: 100
	//   says: 0
}

// noEmbedder is an embedder.Embedder for a pipeline that searches nothing.
type noEmbedder struct{}

func (noEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	return make([][]float32, len(texts)), nil
}
func (noEmbedder) Model() string { return "none" }
func (noEmbedder) Dim() int      { return 1 }
