package sessions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// patternStep folds a pattern's records as the patterns processor applies
// them: a second copy of a record (same scope, source and id) moves no
// count, a later evaluation moves a session in or out of the successes, a
// session that leaves takes its counts with it, and the last one out
// removes the pattern. Each step carries the counts and confidence after
// it, which GET /v1/patterns/{id}/history answers.
func TestPatternStepsFoldAsTheProcessorCounts(t *testing.T) {
	rec := func(id string, d PatternCountedData) (*events.Envelope, PatternCountedData) {
		d.PatternID = "pat-1"
		return &events.Envelope{ID: id, Source: "chronicle/sessions"}, d
	}
	var p Pattern
	found := false
	seen := map[string]bool{}
	var got []string
	for _, r := range []struct {
		id string
		d  PatternCountedData
	}{
		{"e1", PatternCountedData{SessionID: "s1", First: true, Met: true}},
		{"e1", PatternCountedData{SessionID: "s1", First: true, Met: true}}, // the same record again
		{"e2", PatternCountedData{SessionID: "s2", First: true}},
		{"e3", PatternCountedData{SessionID: "s2", Met: true}},                           // s2 re-scored: now a success
		{"e4", PatternCountedData{SessionID: "s1", Met: true, WasMet: true, Left: true}}, // s1's sequence changed
		{"e5", PatternCountedData{SessionID: "s2", WasMet: true, Left: true}},
		{"e6", PatternCountedData{SessionID: "s3", Left: true}}, // out of a pattern not there
	} {
		env, d := rec(r.id, r.d)
		var step PatternStep
		p, found, step = patternStep(p, found, seen, "project:a", env, d)
		got = append(got, fmt.Sprintf("%s %d/%d %.3f", step.Change, step.SucceededCount, step.SessionCount, step.Confidence))
		if step.Effect == "" {
			t.Errorf("record %s: no effect in words", r.id)
		}
	}
	want := []string{
		"created 1/1 0.667", "duplicate 1/1 0.667", "updated 1/2 0.500", "updated 2/2 0.750",
		"updated 1/1 0.667", "removed 0/0 0.500", "unchanged 0/0 0.500",
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("steps\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
}
