package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// A write that raced another and was rejected from the log says where it
// was written, also when its pointer maps to the body's member (before,
// "decision_id: …" alone, the same words as a write refused before
// anything was written: a walkthrough, 2026-11-30); one refused before
// writing does not.
func TestRacedRefusalSaysItWasWritten(t *testing.T) {
	reason := `"drace": id already in use (pending)`
	raced := &workflows.Refusal{Pointer: "/data/decision_id", Reason: reason, Written: "chronicle.workflows:0:45",
		Err: errors.New(workflows.WrittenPrefix("chronicle.workflows:0:45") + "workflow project:a/wr6: /data/decision_id: " + reason)}
	msg, ptr := refusalMessage("decisions", raced)
	if ptr != "/decision_id" || !strings.HasPrefix(msg, "written at chronicle.workflows:0:45 and rejected there") || !strings.HasSuffix(msg, "decision_id: "+reason) {
		t.Errorf("raced: %q at %s", msg, ptr)
	}
	before := &workflows.Refusal{Pointer: "/data/decision_id", Reason: reason, Err: errors.New("workflow project:a/wr6: /data/decision_id: " + reason)}
	if msg, ptr := refusalMessage("decisions", before); msg != "decision_id: "+reason || ptr != "/decision_id" {
		t.Errorf("refused before writing: %q at %s", msg, ptr)
	}
}

// Two answers racing to one decision: the loser's refusal names the
// decision by the path's name, /decision_id, as the README's example says
// (it named /data/decision_id, a member of no request body: a
// walkthrough, 2026-11-30).
func TestRacedAnswerNamesTheDecision(t *testing.T) {
	reason := `"d1": not pending`
	raced := &workflows.Refusal{Pointer: "/data/decision_id", Reason: reason, Written: "chronicle.workflows:0:44",
		Err: errors.New(workflows.WrittenPrefix("chronicle.workflows:0:44") + "workflow project:a/wf1: /data/decision_id: " + reason)}
	msg, ptr := refusalMessage("answer", raced)
	if ptr != "/decision_id" || !strings.HasPrefix(msg, "written at chronicle.workflows:0:44 and rejected there") || !strings.HasSuffix(msg, "decision_id: "+reason) {
		t.Errorf("raced answer: %q at %s", msg, ptr)
	}
	// the answer's own members keep theirs
	if _, ptr := requestPointer("answer", "x", "/data/answer", "minLength"); ptr != "/answer" {
		t.Errorf("answer's /data/answer at %s, want /answer", ptr)
	}
}
