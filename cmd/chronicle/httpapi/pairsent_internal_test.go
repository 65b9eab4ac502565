package httpapi

import (
	"strconv"
	"testing"
)

// The sessions whose PAIR context a process published are remembered up
// to maxPairSent, the newest always among them: a server improving
// sessions for months grew the set by one entry per session (a review,
// 2026-12-07).
func TestPairSentIsBounded(t *testing.T) {
	s := &Server{}
	for i := range 3 * maxPairSent {
		s.markPairSent("project:a/s" + strconv.Itoa(i))
	}
	if n := len(s.pairSent); n != maxPairSent {
		t.Fatalf("%d sessions remembered after %d, want %d", n, 3*maxPairSent, maxPairSent)
	}
	last := "project:a/s" + strconv.Itoa(3*maxPairSent-1)
	if !s.pairSent[last] {
		t.Fatalf("the newest session %s was forgotten", last)
	}
	// marking a remembered one again forgets nothing
	s.markPairSent(last)
	if n := len(s.pairSent); n != maxPairSent {
		t.Fatalf("%d after marking %s again, want %d", n, last, maxPairSent)
	}
}
