package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// Two answers to one decision both pass Check before either is applied
// (concurrent requests); the second one written is rejected by the
// processor. Submit then names the processor's reason, as Check would
// have had it come second: a *Refusal wrapping ErrNotPending. Before, it
// was a bare ErrRejected ("rejected by the workflows processor"), which
// the route answered as a 409 naming no reason (an agent-runtime
// walkthrough: 6 concurrent answers, the racing ones got that 409).
func TestRacedWriteNamesTheReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Processors: []processors.Processor{workflows.Processor{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	svc := &workflows.Service{Store: p.Store, Producer: p.Producer}
	n := 0
	env := func(typ events.Type, data any) events.Envelope {
		n++
		e, err := events.New(typ, "test", fmt.Sprintf("e%d", n), time.Now(), data)
		if err != nil {
			t.Fatal(err)
		}
		e.Scope = "project:a"
		return e
	}
	if _, err := svc.Submit(ctx, env(events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w", DecisionID: "d1", Kind: "human", Question: "go?"})); err != nil {
		t.Fatal(err)
	}
	yes := env(events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w", DecisionID: "d1", Answer: "yes"})
	no := env(events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w", DecisionID: "d1", Answer: "no"})
	for _, e := range []events.Envelope{yes, no} {
		if err := svc.Check(e); err != nil {
			t.Fatalf("check %s before either is written: %v", e.ID, err)
		}
	}
	if _, err := svc.Submit(ctx, yes); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Submit(ctx, no)
	var ref *workflows.Refusal
	if !errors.As(err, &ref) || !errors.Is(err, workflows.ErrNotPending) || !errors.Is(err, workflows.ErrRejected) || ref.Pointer != "/data/decision_id" || ref.Reason != `"d1": not pending` || !strings.Contains(err.Error(), "rejected there") {
		t.Fatalf("the raced answer: %v (%T); want a *Refusal naming the reason (ErrNotPending) and that it was written and rejected", err, err)
	}
}
