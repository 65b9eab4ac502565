package treesearch

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// TestDecisionStoredBeforeUTCIsFound: a decision a Chronicle before
// Envelope.TimeUTC stored with its event's time as sent ("+02:00") is the
// decision of the same resume read by this build, which asks with the
// time in UTC. Before, the strings differed, hasDecisionAt said no, and
// the resume worker took the resume for a repeat and never drove the
// search (an upgrade walkthrough, 2026-12-07).
func TestDecisionStoredBeforeUTCIsFound(t *testing.T) {
	env := events.Envelope{Time: "2026-12-07T05:00:00.5+02:00"}
	d := events.SearchResumedData{Decision: "approve", Note: "ok", By: "human:ops"}
	old := Search{Decisions: []Decision{{Decision: "approve", Note: "ok", By: "human:ops", Time: env.Time}}}
	if !hasDecisionAt(old, env.TimeUTC(), d) {
		t.Fatalf("decision stored at %s not found at %s", env.Time, env.TimeUTC())
	}
	other := Search{Decisions: []Decision{{Decision: "approve", Note: "ok", By: "human:ops", Time: "2026-12-07T05:00:01+02:00"}}}
	if hasDecisionAt(other, env.TimeUTC(), d) {
		t.Fatal("a decision one second later was taken for this resume's")
	}
}
