package pair_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pair"
)

// pair_recall_at_3 on the 200 bundled tau-bench sessions with USE lite.
// Measured: model 29/58 = 0.5000, lexical (BM25 only) 46/58 = 0.7931,
// memories and coordination patterns merged 29/58 = 0.5000. The
// assertions are those numbers rounded down to two decimals; they move
// when the distiller's wording or the ranking changes.
func TestRecallAt3(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pair.RecallAt3(recs, sharedEmbedder(t))
	if err != nil {
		t.Fatal(err)
	}
	model, lexical, n := r.Model, r.Lexical, r.Sessions
	t.Logf("with coordination patterns (the worker's merged ranking): %.4f", r.WithPatterns)
	t.Logf("pair_recall_at_3: model (USE lite, hybrid index ranking) %.4f, lexical (BM25) %.4f, over %d failed sessions with a successful trial of their task", model, lexical, n)
	if n != 58 {
		t.Errorf("n = %d, want 58 (failed sessions below composite 95 whose task has a successful trial)", n)
	}
	if model < 0.50 || lexical < 0.79 || model > 1 || lexical > 1 || r.WithPatterns < 0.50 || r.WithPatterns > 1 {
		t.Errorf("recall@3 model %.4f (want ≥ 0.50), lexical %.4f (want ≥ 0.79), with patterns %.4f (want ≥ 0.50)", model, lexical, r.WithPatterns)
	}
}
