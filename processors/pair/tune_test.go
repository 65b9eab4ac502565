package pair

import (
	"context"
	"os"
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// TestTuneRanking is the grid search behind search.DefaultRanking, on the
// tuning half of RecallAt3's tasks only (it never scores the report half).
// It asserts nothing and is skipped unless CHRONICLE_TUNE_RANKING=1:
//
//	CHRONICLE_TUNE_RANKING=1 go test ./processors/pair -run TestTuneRanking -v
func TestTuneRanking(t *testing.T) {
	if os.Getenv("CHRONICLE_TUNE_RANKING") != "1" {
		t.Skip("set CHRONICLE_TUNE_RANKING=1 to print the tuning grid")
	}
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := buildBank(ctx, recs, emb)
	if err != nil {
		t.Fatal(err)
	}
	variants := []search.Ranking{{Fusion: search.FusionAlpha}}
	for _, lw := range []float64{1, 3, 5} {
		variants = append(variants, search.Ranking{Fusion: search.FusionScore, VectorWeight: 1, LexicalWeight: lw})
	}
	for _, k := range []float64{1, 3, 5, 10, 20, 60} {
		for _, lw := range []float64{1, 2, 3, 5, 8, 16} {
			for _, d := range []float64{0, 0.9} {
				variants = append(variants, search.Ranking{Fusion: search.FusionRRF, K: k, VectorWeight: 1, LexicalWeight: lw, DuplicateJaccard: d})
			}
		}
	}
	tuning := tuningTasks(b.cases)
	for _, v := range variants {
		b.ix.SetRanking(v)
		var tune tally
		for _, c := range b.cases {
			if !tuning[c.task] {
				continue
			}
			h, err := b.score(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			tune.add(h)
		}
		t.Logf("%+v tuning half: %+v", v, tune)
	}
}
