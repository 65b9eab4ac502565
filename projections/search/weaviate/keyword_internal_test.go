package weaviate

import (
	"math"
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// A keyword match Weaviate scores at or below 0 stays a keyword match,
// with a positive score below every positive one and in its order among
// the others; the store dropped such matches, so a memory was found by its
// vector alone (a Weaviate walkthrough, 2026-11-30: "zebra" in a
// one-memory scope scored −0.304 by the server, relevance 0.5 against 1
// on the embedded store). Not reproduced against the test server here: a
// memory written three times, each version flushed to a segment of its
// own, still scored 0.39 there; the walkthrough's server had run a demo
// and many searches (see TestUnchangedDocumentIsNotWrittenAgain in
// projections/search for the writes that led there).
func TestKeywordScoresKeepNegativeMatches(t *testing.T) {
	list := func(scores ...float64) []scored {
		out := make([]scored, len(scores))
		for i, s := range scores {
			out[i] = scored{doc: search.Doc{ID: string(rune('a' + i))}, score: s}
		}
		return out
	}
	// none positive: the best gets the floor 1, the others below it in order
	got := keywordScores(list(-0.1, -0.3, -1))
	if !(math.Abs(got[0]-math.Exp(-0.1)) < 1e-12 && got[0] > got[1] && got[1] > got[2] && got[2] > 0) {
		t.Fatalf("all negative: %v", got)
	}
	// mixed: positives kept, negatives below half the least positive
	got = keywordScores(list(2, 0.5, 0, -0.2))
	if got[0] != 2 || got[1] != 0.5 || !(got[2] <= 0.25 && got[2] > got[3] && got[3] > 0) {
		t.Fatalf("mixed: %v", got)
	}
}
