package processors_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/projections"
)

// A dead letter keeps the pointer of the rejection that names a member
// (HeaderPointer, GET /v1/deadletters' pointer): a schema or processor
// error (events.ValidationError), also wrapped as the store wraps a
// rejection, and the passes processor's RejectError and the workflows
// processor's FieldError (PointerError), whose letters had none (a walkthrough, 2026-11-30). An error naming no member adds none.
func TestDeadLetterKeepsThePointer(t *testing.T) {
	rec := &kgo.Record{Topic: string(events.TopicReasoning), Key: []byte("project:a/t1"), Value: []byte(`{}`)}
	for reason, want := range map[error]string{
		&passes.RejectError{Pointer: "/data/refinement_actions/0/target", Reason: `REMOVE of unknown step id "x"`}:                                                   "/data/refinement_actions/0/target",
		&projections.RejectedError{Err: &passes.RejectError{Pointer: "/data/pass_number", Reason: "not above"}}:                                                      "/data/pass_number",
		&projections.RejectedError{Err: &events.ValidationError{Index: -1, Pointer: "/data/tokens", Reason: "over the quota"}}:                                       "/data/tokens",
		&projections.RejectedError{Err: fmt.Errorf("workflow project:a/wf1: %w", &workflows.FieldError{Pointer: "/data/decision_id", Err: workflows.ErrNotPending})}: "/data/decision_id",
		fmt.Errorf("no member named"): "",
	} {
		got := ""
		for _, h := range processors.DeadLetterRecord(passes.Processor{}, rec, reason).Headers {
			if h.Key == processors.HeaderPointer {
				got = string(h.Value)
			}
		}
		if got != want {
			t.Errorf("%v: pointer header %q, want %q", reason, got, want)
		}
	}
}
