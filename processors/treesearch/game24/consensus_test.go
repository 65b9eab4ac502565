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

// The reducers on GPT-4's samples of the first 20 puzzles of 901–1000,
// written as events through the treesearch processor (which checks each
// decision); chronicle eval measures all 100 (README). The judge's
// objective checks decide what the log's test decides, so judge_selection
// solves every puzzle some sample solves.
func TestConsensusOnRecordedSamples(t *testing.T) {
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, d := range []struct{ file, name string }{{game24.NaiveStandard, "naive_standard"}, {game24.NaiveCoT, "naive_cot"}} {
		r, err := game24.MeasureConsensus(st, d.file, d.name, 20)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", r)
		if r.Puzzles != 20 || r.Samples != 100 || r.Events != 20*100+3*20 || r.BestOfN == 0 {
			t.Fatalf("%s: %+v", d.name, r)
		}
		if r.JudgeSelection != r.BestOfN || r.MajorityVote > r.BestOfN || r.CodeConsensus > r.BestOfN {
			t.Fatalf("%s: judge_selection %d, majority %d, code %d vs best of n %d", d.name, r.JudgeSelection, r.MajorityVote, r.CodeConsensus, r.BestOfN)
		}
	}
}

// The Flujo milestone on recorded outputs: three agents (GPT-4 CoT
// samples) run, their schema-invalid answers ("<expression> = 24") are
// auto-corrected by an RFC 6902 patch (an event the processor checks by
// applying it), and they vote.
func TestThreeAgentsVoteAndAutoCorrect(t *testing.T) {
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := game24.MeasurePanel(st, game24.NaiveCoT, "naive_cot", 3, 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Puzzles != 30 || r.SchemaInvalid == 0 || r.Corrected == 0 || r.Corrected > r.SchemaInvalid || r.SolvedWithCorrection < r.SolvedWithoutCorrection {
		t.Fatalf("%+v", r)
	}
	p, bs, ok, err := treesearch.GetPanel(st, events.EntityKey("org:eval", "naive_cot-panel3-901"))
	if err != nil || !ok || len(bs) != 3 || len(p.Reductions) > 1 {
		t.Fatalf("panel %+v %v %v", p, ok, err)
	}
	for _, b := range bs {
		if b.Patch != nil {
			got, err := treesearch.ApplyPatch([]byte(b.Original), b.Patch)
			if err != nil || string(got) != b.Output {
				t.Fatalf("patch %s on %s gives %s (%v), output %s", b.Patch, b.Original, got, err, b.Output)
			}
		}
	}
}

func TestCorrect(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"answer":"(4 + 8) * (6 - 4) = 24"}`, `{"answer":"(4 + 8) * (6 - 4)"}`},
		{`{"answer":"(4 + 8) * (6 - 4)"}`, ""},     // valid already
		{`{"answer":"There is no solution."}`, ""}, // nothing to correct to
		{`{"answer":"4 × 6 = 24"}`, ""},            // × is not in the schema, cutting "= 24" does not help
	} {
		got, ok, err := game24.Correct([]byte(c.in))
		if err != nil || ok != (c.want != "") || ok && string(got) != c.want {
			t.Errorf("%s: %s %v %v", c.in, got, ok, err)
		}
	}
	patch, err := game24.Diff([]byte(`{"answer":"(4 + 8) * (6 - 4) = 24"}`), []byte(`{"answer":"(4 + 8) * (6 - 4)"}`))
	if err != nil || string(patch) != `[{"value":"(4 + 8) * (6 - 4)","op":"replace","path":"/answer"}]` && string(patch) != `[{"op":"replace","path":"/answer","value":"(4 + 8) * (6 - 4)"}]` {
		t.Fatalf("patch %s %v", patch, err)
	}
}
