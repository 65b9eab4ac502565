package httpapi

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// TestBoundLearnedEnd: a read-only state's learned stream ends at the
// state's positions of chronicle.learned (the offset after the last record
// read), not at the log's end, and reads nothing of a partition the state
// read none of; a log shorter than the bound keeps its own end.
func TestBoundLearnedEnd(t *testing.T) {
	learned := string(events.TopicLearned)
	bound := logBound{{learned, 0}: 9, {learned, 2}: 50, {string(events.TopicSessions), 1}: 99}
	got := boundLearnedEnd(LearnedCursor{0: 40, 1: 12, 2: 30}, bound)
	want := LearnedCursor{0: 10, 1: 0, 2: 30}
	if got.String() != want.String() {
		t.Errorf("boundLearnedEnd: %s, want %s", got, want)
	}
}
