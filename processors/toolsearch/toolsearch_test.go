package toolsearch_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/toolsearch"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// The candidate expansion of the PML design: 3k for an isolated or cold
// tool (α = 1), 1.5k in a dense cluster (α = 0.5), capped at 20.
func TestCandidateCount(t *testing.T) {
	for _, c := range []struct {
		k     int
		alpha float64
		want  int
	}{{5, 1, 15}, {5, 0.5, 8}, {3, 0.75, 7}, {10, 1, 20}, {1, 0.5, 2}} {
		if got := toolsearch.CandidateCount(c.k, c.alpha); got != c.want {
			t.Errorf("CandidateCount(%d, %v) = %d, want %d", c.k, c.alpha, got, c.want)
		}
	}
}

// Search asks for the expanded candidates (5 for k = 3 at α = 0.5),
// reports the 4 it got as re-ranked, scores α·semantic + (1 − α)·
// min(1, graph), keeps the order of equal scores, truncates to k, and
// an α override changes the weights but not the candidates.
func TestSearch(t *testing.T) {
	cands := []toolsearch.Candidate{{"a", 0.9}, {"b", 0.8}, {"c", 0.4}, {"d", 0.4}}
	term := toolsearch.GraphTerm{Alpha: 0.5, Scores: map[string]float64{"c": 3, "b": 0.2}}
	var asked []int
	sem := func(_ context.Context, limit int) ([]toolsearch.Candidate, error) {
		asked = append(asked, limit)
		return cands[:min(limit, len(cands))], nil
	}
	res, err := toolsearch.Search(context.Background(), 3, term, toolsearch.Options{}, sem)
	if err != nil {
		t.Fatal(err)
	}
	want := []toolsearch.Scored{{"c", 0.7, 0.4, 1}, {"b", 0.5, 0.8, 0.2}, {"a", 0.45, 0.9, 0}}
	if len(res.Tools) != 3 || len(asked) != 1 || asked[0] != 5 || res.Candidates != 4 || res.Alpha != 0.5 {
		t.Fatalf("%+v", res)
	}
	for i, w := range want {
		if g := res.Tools[i]; g.Tool != w.Tool || math.Abs(g.Score-w.Score) > 1e-12 || g.Semantic != w.Semantic || g.Graph != w.Graph {
			t.Errorf("tool %d: %+v, want %+v", i, g, w)
		}
	}
	zero := 0.0
	res, _ = toolsearch.Search(context.Background(), 4, term, toolsearch.Options{Alpha: &zero}, sem)
	if got := []string{res.Tools[0].Tool, res.Tools[1].Tool, res.Tools[2].Tool, res.Tools[3].Tool}; !slices.Equal(got, []string{"c", "b", "a", "d"}) {
		t.Errorf("graph only: %v", got)
	}
	if asked[1] != toolsearch.CandidateCount(4, 0.5) {
		t.Errorf("the override changed the candidates: %v", asked)
	}
	if _, err := toolsearch.Search(context.Background(), 21, term, toolsearch.Options{}, sem); !errors.Is(err, toolsearch.ErrLimit) {
		t.Errorf("limit 21: %v", err)
	}
}

// The evaluation runs on the bundled sessions through the route's search
// and yields figures in [0, 1] over a positive number of queries, hybrid
// and its parts measured on the same queries.
func TestEvaluateBundled(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled {
		var few []taubench.Record
		for _, r := range recs {
			if r.TaskID < 4 {
				few = append(few, r)
			}
		}
		recs = few
	}
	emb, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := toolsearch.Evaluate(context.Background(), recs, emb, st)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Queries == 0 || rep.Tasks < 2 || rep.Halves["even"].Queries+rep.Halves["odd"].Queries != rep.Queries || rep.MeanAlpha <= 0 || rep.MeanAlpha > 1 || rep.InCandidates < rep.Hybrid.HitAt3 || rep.InCandidates > 1 {
		t.Fatalf("report %+v", rep)
	}
	for name, s := range map[string]toolsearch.Scores{"semantic": rep.Semantic, "graph": rep.Graph, "hybrid": rep.Hybrid} {
		for _, x := range []float64{s.HitAt1, s.HitAt3, s.MRR} {
			if !(x >= 0 && x <= 1) {
				t.Errorf("%s: %+v out of [0, 1]", name, s)
			}
		}
		// ranks 2–3 add at most 1/2 each, ranks 4–5 at most 1/4
		if s.HitAt1 > s.HitAt3 || s.MRR < s.HitAt1 || s.MRR > s.HitAt1+(s.HitAt3-s.HitAt1)/2+(1-s.HitAt3)/4+1e-12 {
			t.Errorf("%s: inconsistent %+v", name, s)
		}
	}
	t.Logf("%+v", rep)
}
