package pair_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pair"
)

// pair_recall_at_3 on the 200 bundled tau-bench sessions with USE lite,
// search.DefaultRanking (convex combination, title + description
// vectors), goal-expanded queries and collapsed hits that keep their
// provenance. Measured (the test logs them): all 58 cases model 54/58 =
// 0.931, BM25 on the gap alone 46/58 = 0.793, with patterns 51/58 =
// 0.879; tuning half (28 cases) model 27/28 = 0.964; report half (30
// cases) model 27/30 = 0.900, BM25 gap only 24/30 = 0.800, BM25 with goal
// 27/30 = 0.900, with patterns 27/30 = 0.900. The report half was
// inspected once (the README's "A collapsed hit keeps the provenance"),
// so its figure is no longer a held-out one. The assertions are those
// numbers rounded down to two decimals; they move when the distiller's
// wording or the ranking changes.
func TestRecallAt3(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pair.RecallAt3(recs, sharedEmbedder(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		name string
		r    *pair.Recall
	}{{"all", &r}, {"tuning", r.Tuning}, {"report", r.Report}} {
		t.Logf("%s: %d cases, model %.4f, BM25 gap only %.4f, BM25 with goal %.4f, with patterns %.4f",
			h.name, h.r.Sessions, h.r.Model, h.r.Lexical, h.r.LexicalWithGoal, h.r.WithPatterns)
	}
	if r.Sessions != 58 || r.Tuning.Sessions+r.Report.Sessions != 58 {
		t.Errorf("n = %d (%d + %d), want 58 (failed sessions below composite 95 whose task has a successful trial)", r.Sessions, r.Tuning.Sessions, r.Report.Sessions)
	}
	rep := r.Report
	if rep.Model < 0.89 || rep.Model < rep.LexicalWithGoal || r.Model < 0.93 || r.Lexical < 0.79 || r.WithPatterns < 0.87 {
		t.Errorf("report half model %.4f (want ≥ 0.89 and ≥ BM25 with the goal %.4f); all: model %.4f (want ≥ 0.93), BM25 %.4f (want ≥ 0.79), with patterns %.4f (want ≥ 0.87)",
			rep.Model, rep.LexicalWithGoal, r.Model, r.Lexical, r.WithPatterns)
	}
}
