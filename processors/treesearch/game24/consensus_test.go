package game24_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/projections"
)

func TestReducers(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	bs := []treesearch.Branch{
		{ID: "b0", Output: "Answer: 1 + 2 = 24", Answer: "1+2", Score: f(1.0 / 3)},
		{ID: "b1", Output: " Answer: (4 * 6) = 24\n", Answer: "(4*6)", Score: f(1)},
		{ID: "b2", Output: "Answer: (4 * 6) = 24", Answer: "(4*6)", Score: f(1)},
		{ID: "b3", Output: "Answer: 1+2 = 24", Answer: "1+2"},
		{ID: "b4", Output: "Answer: 1 + 2 = 24", Answer: "1+2"},
	}
	for _, c := range []struct {
		reducer       string
		winner, votes int
	}{
		{events.ReducerMajorityVote, 0, 3},   // 1+2 three times
		{events.ReducerCodeConsensus, 0, 2},  // "Answer: 1 + 2 = 24" twice (b0, b4); (4 * 6) twice too, later
		{events.ReducerJudgeSelection, 1, 2}, // b1 and b2 score 1: the earlier wins
	} {
		w, v, ok := treesearch.Reduce(c.reducer, bs)
		if !ok || w != c.winner || v != c.votes {
			t.Errorf("%s: winner %d votes %d, want %d %d", c.reducer, w, v, c.winner, c.votes)
		}
	}
}

// The reducers on GPT-4's 100 samples per puzzle of 901–1000, written as
// events through the treesearch processor (which checks each decision).
// The log's own figures: IO 7.3% of samples correct, CoT 4.0%; the best of
// 100 IO samples solves 33 puzzles.
func TestConsensusOnRecordedSamples(t *testing.T) {
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	io, err := game24.MeasureConsensus(st, game24.NaiveStandard, "naive_standard")
	if err != nil {
		t.Fatal(err)
	}
	cot, err := game24.MeasureConsensus(st, game24.NaiveCoT, "naive_cot")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v\n%+v", io, cot)
	if io.Puzzles != 100 || io.Samples != 100 || io.BestOfN != 33 || io.SampleAccuracy < 0.073 || io.SampleAccuracy > 0.074 {
		t.Fatalf("naive_standard: %+v", io)
	}
	if cot.SampleAccuracy < 0.035 || cot.SampleAccuracy > 0.045 {
		t.Fatalf("naive_cot: %+v", cot)
	}
	// the judge checks exactly what the log's test checks: it finds every
	// puzzle some sample solves
	if io.JudgeSelection != io.BestOfN || cot.JudgeSelection != cot.BestOfN {
		t.Fatalf("judge_selection %d/%d vs best of n %d/%d", io.JudgeSelection, cot.JudgeSelection, io.BestOfN, cot.BestOfN)
	}
	if io.Events != 100*100+3*100 {
		t.Fatalf("%d events", io.Events)
	}
}
