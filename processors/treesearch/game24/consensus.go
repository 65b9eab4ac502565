package game24

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections"
)

// Sample datasets bundled in data/: GPT-4 (temperature 0.7), 100 samples
// per puzzle of 901–1000, from the Tree of Thoughts repository.
const (
	NaiveStandard = "data/gpt-4_0.7_naive_standard_sample_100_start900_end1000.json.gz"
	NaiveCoT      = "data/gpt-4_0.7_naive_cot_sample_100_start900_end1000.json.gz"
)

// SampleRun is one puzzle of a sampling log: the outputs and whether the
// log judged each correct (ToT's test_output).
type SampleRun struct {
	Rank    int
	Puzzle  string
	Outputs []string
	Correct []bool
}

// LoadSamples reads a bundled sampling log (accs or infos[].r as the log
// has it).
func LoadSamples(file string) ([]SampleRun, error) {
	raw, err := readGz(file)
	if err != nil {
		return nil, err
	}
	var recs []struct {
		Idx   int      `json:"idx"`
		Ys    []string `json:"ys"`
		Accs  []bool   `json:"accs"`
		Infos []struct {
			R int `json:"r"`
		} `json:"infos"`
	}
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, fmt.Errorf("game24: %s: %w", file, err)
	}
	puzzles, err := Puzzles(1, 1362)
	if err != nil {
		return nil, err
	}
	byRank := map[int]string{}
	for _, p := range puzzles {
		byRank[p.Rank] = p.Numbers
	}
	var out []SampleRun
	for _, r := range recs {
		s := SampleRun{Rank: r.Idx + 1, Puzzle: byRank[r.Idx+1], Outputs: r.Ys}
		for i := range r.Ys {
			switch {
			case i < len(r.Accs):
				s.Correct = append(s.Correct, r.Accs[i])
			case i < len(r.Infos):
				s.Correct = append(s.Correct, r.Infos[i].R == 1)
			default:
				s.Correct = append(s.Correct, false)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// FinalAnswer is an output's final answer for majority_vote: the text
// after the last "Answer:", without "= 24" and without spaces; "" when
// the output has no answer line.
func FinalAnswer(output string) string {
	i := strings.LastIndex(output, "Answer:")
	if i < 0 {
		return ""
	}
	a := strings.TrimSpace(strings.SplitN(output[i+len("Answer:"):], "\n", 2)[0])
	a = strings.TrimSpace(strings.TrimSuffix(a, "= 24"))
	return strings.Join(strings.Fields(a), "")
}

// JudgeScore is the multi-signal evaluator's score of an output for
// judge_selection: the share of its objective checks passed — it states
// an answer "Answer: <expression> = 24"; the expression uses each of the
// puzzle's numbers once; it equals 24 (exact arithmetic).
func JudgeScore(puzzle, output string) (float64, string) {
	i := strings.LastIndex(output, "Answer:")
	if i < 0 {
		return 0, "no answer line"
	}
	line := "Answer:" + strings.SplitN(output[i+len("Answer:"):], "\n", 2)[0]
	expr, ok := ParseAnswer(line)
	if !ok {
		return 0, "the answer is not \"<expression> = 24\""
	}
	v, used, err := Eval(expr)
	if err != nil {
		return 1.0 / 3, "the expression does not parse: " + err.Error()
	}
	passed, report := 1, []string{"answer stated"}
	nums, _ := ParseState(puzzle)
	if State(used) == State(nums) {
		passed++
		report = append(report, "each number once")
	}
	if v.Cmp(Target) == 0 {
		passed++
		report = append(report, "equals 24")
	}
	return float64(passed) / 3, strings.Join(report, ", ")
}

// ConsensusResult is what the reducers achieve on one sampling log.
type ConsensusResult struct {
	Dataset string `json:"dataset"`
	Puzzles int    `json:"puzzles"`
	Samples int    `json:"samples_per_puzzle"`
	// SampleAccuracy is the share of all samples the log judges correct
	// (the published IO / CoT success rate).
	SampleAccuracy float64 `json:"sample_accuracy"`
	// BestOfN: puzzles where at least one sample is correct (an oracle).
	BestOfN int `json:"best_of_n"`
	// Puzzles whose reduced answer the log judges correct, per reducer.
	MajorityVote   int `json:"majority_vote"`
	CodeConsensus  int `json:"code_consensus"`
	JudgeSelection int `json:"judge_selection"`
	// Events written through the treesearch processor.
	Events int `json:"events"`
}

// MeasureConsensus writes each puzzle of a sampling log as a panel —
// every sample a search.branch.completed.v1, then one
// search.consensus.reduced.v1 per reducer — through the treesearch
// processor's Apply into store (which checks each reducer's decision
// against its own reduction), and counts from the projection the puzzles
// whose chosen sample the log judges correct. limit > 0 takes the first
// limit puzzles only.
func MeasureConsensus(store *projections.Store, file, name string, limit int) (ConsensusResult, error) {
	runs, err := LoadSamples(file)
	if err != nil {
		return ConsensusResult{}, err
	}
	if limit > 0 && limit < len(runs) {
		runs = runs[:limit]
	}
	res := ConsensusResult{Dataset: name, Puzzles: len(runs)}
	off, _ := store.NextOffset(treesearch.Name, string(events.TopicSearches), 0)
	at := time.Date(2023, 5, 17, 0, 0, 0, 0, time.UTC) // the ToT paper's date: events need a time, the log has none
	apply := func(t events.Type, id string, payload any) error {
		env, err := events.New(t, "chronicle/eval/"+name, id, at, payload)
		if err != nil {
			return err
		}
		env.Scope = "org:eval"
		_, err = store.Apply(treesearch.Name, projections.Position{Topic: string(events.TopicSearches), Offset: off}, &env, treesearch.Processor{}.Apply)
		off++
		res.Events++
		return err
	}
	total, correct := 0, 0
	for _, run := range runs {
		res.Samples = max(res.Samples, len(run.Outputs))
		panel := fmt.Sprintf("%s-%d", name, run.Rank)
		var bs []treesearch.Branch
		any := false
		for i, out := range run.Outputs {
			score, report := JudgeScore(run.Puzzle, out)
			b := events.SearchBranchData{SearchID: panel, BranchID: fmt.Sprintf("b%03d", i), Output: out, Answer: FinalAnswer(out), Score: &score, Report: report}
			if err := apply(events.SearchBranchCompleted, panel+"/"+b.BranchID, b); err != nil {
				return res, err
			}
			bs = append(bs, treesearch.Branch{ID: b.BranchID, Output: out, Answer: b.Answer, Score: b.Score})
			total++
			if run.Correct[i] {
				correct++
				any = true
			}
		}
		if any {
			res.BestOfN++
		}
		for _, red := range []string{events.ReducerMajorityVote, events.ReducerCodeConsensus, events.ReducerJudgeSelection} {
			w, votes, ok := treesearch.Reduce(red, bs)
			if !ok {
				continue
			}
			if err := apply(events.SearchConsensusReduced, panel+"/"+red, events.SearchConsensusData{SearchID: panel, Reducer: red, Winner: bs[w].ID, Output: bs[w].Output, Votes: votes, Branches: len(bs)}); err != nil {
				return res, err
			}
		}
		// read the decisions back from the projection
		p, pbs, ok, err := treesearch.GetPanel(store, events.EntityKey("org:eval", panel))
		if err != nil || !ok {
			return res, fmt.Errorf("game24: panel %s not projected (%v)", panel, err)
		}
		idx := map[string]int{}
		for i, b := range pbs {
			idx[b.ID] = i
		}
		for _, r := range p.Reductions {
			if !run.Correct[idx[r.Winner]] {
				continue
			}
			switch r.Reducer {
			case events.ReducerMajorityVote:
				res.MajorityVote++
			case events.ReducerCodeConsensus:
				res.CodeConsensus++
			case events.ReducerJudgeSelection:
				res.JudgeSelection++
			}
		}
	}
	if total > 0 {
		res.SampleAccuracy = float64(correct) / float64(total)
	}
	return res, nil
}
