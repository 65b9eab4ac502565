package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAnsweringAnAnsweredDecisionIsA409: a second answer to a decision
// answered already is a 409 naming the decision and that it was answered
// (as resuming a search that is not paused); a decision never asked stays
// a 404, and a retry of the first answer (its event_id) stays a 200.
// Before, the second answer was a 404 "not pending", as for a decision
// that never existed (found by a new user's walkthrough).
func TestAnsweringAnAnsweredDecisionIsA409(t *testing.T) {
	_, post, logged := workflowAPI(t)
	if code, m := post("/v1/workflows/w/decisions", `{"decision_id":"d","kind":"human","question":"go?","options":["yes","no"],"layer":1}`); code != http.StatusOK {
		t.Fatalf("the decision: %d %v", code, m)
	}
	if code, m := post("/v1/workflows/w/decisions/d", `{"event_id":"ans-1","answer":"yes","by":"me"}`); code != http.StatusOK {
		t.Fatalf("the answer: %d %v", code, m)
	}
	before := logged()
	code, m := post("/v1/workflows/w/decisions/d", `{"event_id":"ans-2","answer":"no","by":"you"}`)
	if msg, _ := m["error"].(string); code != http.StatusConflict || !strings.Contains(msg, `decision "d"`) || !strings.Contains(msg, "answered already") || !strings.Contains(msg, `"yes"`) {
		t.Errorf("a second answer: %d %v; want 409 naming decision d, that it was answered and the answer", code, m)
	}
	if code, m := post("/v1/workflows/w/decisions/nope", `{"event_id":"ans-3","answer":"no","by":"you"}`); code != http.StatusNotFound {
		t.Errorf("an answer to a decision never asked: %d %v; want 404", code, m)
	}
	if n := logged(); n != before {
		t.Errorf("the workflow log grew from %d to %d records: a refused answer wrote something", before, n)
	}
	if code, m := post("/v1/workflows/w/decisions/d", `{"event_id":"ans-1","answer":"yes","by":"me"}`); code != http.StatusOK {
		t.Errorf("a retry of the first answer: %d %v; want 200", code, m)
	}
}
