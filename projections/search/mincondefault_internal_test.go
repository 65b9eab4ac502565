package search

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// min_confidence left out is 0.5, except for coordination patterns with
// outcome failure: their confidence is a success rate, below 0.5 for every
// one of them, so the default hid them all. A value sent stands.
func TestMinConfidenceDefault(t *testing.T) {
	for _, c := range []struct {
		coll    Collection
		outcome string
		sent    *float64
		want    float64
	}{
		{Patterns, "failure", nil, 0},
		{Patterns, "all", nil, 0.5},
		{Patterns, "success", nil, 0.5},
		{Memories, "failure", nil, 0.5},
		{Patterns, "failure", ptr(0.3), 0.3},
	} {
		q, err := normalise(Query{Text: "x", Collection: c.coll, Outcome: c.outcome, MinConfidence: c.sent})
		if err != nil || *q.MinConfidence != c.want {
			t.Errorf("%s outcome %s, sent %v: min_confidence %v (%v), want %v", c.coll, c.outcome, c.sent, *q.MinConfidence, err, c.want)
		}
	}
}

func ptr(f float64) *float64 { return &f }

// A min_confidence sent outside 0..1 is refused naming it, NaN too: it
// passed the check (every comparison with NaN is false) and turned the
// filter off (found by a new user's walkthrough).
func TestMinConfidenceOutOfRange(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 2, -0.1} {
		_, err := normalise(Query{Text: "x", Collection: Memories, MinConfidence: ptr(f)})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "min_confidence: ") {
			t.Errorf("min_confidence %v: %v; want ErrInvalid naming min_confidence", f, err)
		}
	}
}

// A query is at most MaxQueryLength characters, counted as code points
// (a query of 8,192 two-byte characters passes): every hit's
// memory.retrieved.v1 carries it, and before this bound one search of
// 910,000 characters wrote about 18 MB to the log (a new user's
// walkthrough, 2026-12-03).
func TestQueryLengthBounded(t *testing.T) {
	if _, err := normalise(Query{Text: strings.Repeat("é", MaxQueryLength), Collection: Memories}); err != nil {
		t.Fatalf("a query of %d characters: %v", MaxQueryLength, err)
	}
	_, err := normalise(Query{Text: strings.Repeat("a", MaxQueryLength+1), Collection: Memories})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "query: 8193 characters, above the 8192 allowed") {
		t.Fatalf("a query of %d characters: %v; want ErrInvalid naming query and both lengths", MaxQueryLength+1, err)
	}
}
