package game24

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

//go:embed data/24.csv data/*.json.gz
var data embed.FS

// readGz reads a bundled gzipped file.
func readGz(file string) ([]byte, error) {
	f, err := data.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// ToTFile is the bundled Tree of Thoughts log: GPT-4 (temperature 0.7),
// one proposal prompt per state, 3 value samples per candidate, the 5 best
// kept per step, puzzles 901–1000.
const ToTFile = "data/gpt-4_0.7_propose1_value3_greedy5_start900_end1000.json.gz"

// Puzzle is one row of 24.csv.
type Puzzle struct {
	Rank    int
	Numbers string // canonical state, e.g. "4 5 6 10"
}

// Puzzles returns the puzzles of ranks from..to (inclusive) of the bundled
// 24.csv.
func Puzzles(from, to int) ([]Puzzle, error) {
	f, err := data.Open("data/24.csv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("game24: 24.csv: %w", err)
	}
	var out []Puzzle
	for _, r := range rows[1:] {
		rank, err := strconv.Atoi(r[0])
		if err != nil {
			return nil, fmt.Errorf("game24: 24.csv: rank %q", r[0])
		}
		if rank < from || rank > to {
			continue
		}
		nums, err := ParseState(r[1])
		if err != nil {
			return nil, err
		}
		out = append(out, Puzzle{Rank: rank, Numbers: State(nums)})
	}
	return out, nil
}

// ToTStep is one step of a Tree of Thoughts run as logged: the states kept
// (ys), the proposals (new_ys), their values and the selection.
type ToTStep struct {
	Step        int       `json:"step"`
	X           string    `json:"x"`
	Ys          []string  `json:"ys"`
	NewYs       []string  `json:"new_ys"`
	Values      []float64 `json:"values"`
	SelectNewYs []string  `json:"select_new_ys"`
}

// ToTRun is one puzzle of a Tree of Thoughts log.
type ToTRun struct {
	Idx   int       `json:"idx"`
	Steps []ToTStep `json:"steps"`
	Ys    []string  `json:"ys"`
	Infos []struct {
		R int `json:"r"`
	} `json:"infos"`
}

// LoadToT reads a Tree of Thoughts log (gzipped or not).
func LoadToT(r io.Reader) ([]ToTRun, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	var runs []ToTRun
	if err := json.Unmarshal(b, &runs); err != nil {
		return nil, fmt.Errorf("game24: tree of thoughts log: %w", err)
	}
	return runs, nil
}

// BundledToT returns the bundled log.
func BundledToT() ([]ToTRun, error) {
	f, err := data.Open(ToTFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadToT(f)
}

// Recorded is GPT-4's recorded proposer and evaluator, looked up the way
// Tree of Thoughts prompted it. ToT's proposal prompt holds only the
// numbers left (the whole trajectory once 24 is left, to write the answer),
// and its value prompt only the numbers left after the step (the answer
// line for the last step), with answers cached by prompt. So the proposals
// for a state are those GPT-4 made for the first logged trajectory that
// reached the same numbers (the same trajectory once 24 is left), and a
// candidate's value is the one GPT-4 gave the numbers it leaves (the answer
// line). Score = value / 60, the most 3 "sure" samples (20 each) give. A
// state the run never expanded has no recorded proposals
// (treesearch.ErrUnknownState: the node is unexpandable). The objective
// checks are the arithmetic ones.
type Recorded struct {
	once     sync.Once
	err      error
	children map[string][]string // lookup key → proposal lines, in log order
	values   map[string]float64  // lookup key → value
	// Runs is the log (the bundled one when nil at first use).
	Runs []ToTRun
}

// proposalKey is where the proposals for the last node of path are
// recorded: the numbers left, or the trajectory once 24 is left.
func proposalKey(path []treesearch.Step) string {
	last := path[len(path)-1].State
	if _, ok := reached(last); ok || strings.HasPrefix(last, "invalid:") {
		return puzzleOf(path) + "\x00y:" + Trajectory(path)
	}
	return puzzleOf(path) + "\x00s:" + last
}

// valueKey is where the value of line after path is recorded: the numbers
// it leaves, or the answer line.
func valueKey(path []treesearch.Step, line string) string {
	state, reason, _ := Next(path, line)
	switch {
	case strings.HasPrefix(state, "answer:"):
		return puzzleOf(path) + "\x00a:" + strings.TrimSpace(line)
	case reason == "":
		return puzzleOf(path) + "\x00v:" + state
	}
	return puzzleOf(path) + "\x00y:" + Trajectory(path) + line
}

// replay turns a logged trajectory into a path; ok is false when a line
// fails the checks (its later states are unknown).
func replay(puzzle, y string) ([]treesearch.Step, bool) {
	path := []treesearch.Step{{NodeID: treesearch.RootID, State: puzzle}}
	for _, l := range strings.SplitAfter(y, "\n") {
		if l == "" {
			continue
		}
		state, reason, _ := Next(path, l)
		path = append(path, treesearch.Step{Depth: len(path), Candidate: l, State: state})
		if reason != "" {
			return path, false
		}
	}
	return path, true
}

func (r *Recorded) load() error {
	r.once.Do(func() {
		if r.Runs == nil {
			if r.Runs, r.err = BundledToT(); r.err != nil {
				return
			}
		}
		r.children, r.values = map[string][]string{}, map[string]float64{}
		for _, run := range r.Runs {
			if len(run.Steps) == 0 {
				continue
			}
			nums, err := ParseState(run.Steps[0].X)
			if err != nil {
				r.err = err
				return
			}
			puzzle := State(nums)
			for _, st := range run.Steps {
				for _, y := range st.Ys {
					path, _ := replay(puzzle, y)
					k := proposalKey(path)
					if _, done := r.children[k]; done {
						continue
					}
					lines := []string{}
					for i, ny := range st.NewYs {
						rest, ok := strings.CutPrefix(ny, y)
						if !ok || rest == "" {
							continue
						}
						lines = append(lines, rest)
						if vk := valueKey(path, rest); i < len(st.Values) {
							if _, seen := r.values[vk]; !seen {
								r.values[vk] = st.Values[i]
							}
						}
					}
					r.children[k] = lines
				}
			}
		}
	})
	return r.err
}

// Trajectory is the Tree of Thoughts text of a path: its steps' lines.
func Trajectory(path []treesearch.Step) string {
	var b strings.Builder
	for _, s := range path[1:] {
		b.WriteString(s.Candidate)
	}
	return b.String()
}

// Component implements treesearch.Proposer and treesearch.Evaluator.
func (*Recorded) Component() events.SearchComponent {
	return events.SearchComponent{Name: "game24-recorded-gpt-4-tot-propose1-value3", Version: "1"}
}

// Proposals returns the recorded proposal lines for the trajectory of
// path; ok is false outside the recorded tree.
func (r *Recorded) Proposals(path []treesearch.Step) ([]string, bool, error) {
	if err := r.load(); err != nil {
		return nil, false, err
	}
	ps, ok := r.children[proposalKey(path)]
	return ps, ok, nil
}

// Value returns GPT-4's recorded value of the trajectory of path followed
// by line.
func (r *Recorded) Value(path []treesearch.Step, line string) (float64, bool, error) {
	if err := r.load(); err != nil {
		return 0, false, err
	}
	v, ok := r.values[valueKey(path, line)]
	return v, ok, nil
}

// Propose implements treesearch.Proposer.
func (r *Recorded) Propose(_ context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	lines, ok, err := r.Proposals(req.Path)
	if err != nil {
		return treesearch.Proposal{}, err
	}
	if !ok {
		return treesearch.Proposal{Unexpandable: true}, fmt.Errorf("game24: %w: %q", treesearch.ErrUnknownState, Trajectory(req.Path))
	}
	return ProposalOf(req.Path, lines), nil
}

// ProposalOf turns proposal lines for the last node of path into
// candidates with their states.
func ProposalOf(path []treesearch.Step, lines []string) treesearch.Proposal {
	var out treesearch.Proposal
	for _, l := range lines {
		state, _, _ := Next(path, l)
		out.Candidates = append(out.Candidates, treesearch.Candidate{Text: l, State: state})
		out.Raw += l
	}
	return out
}

// MaxValue is the most a recorded value can be: 3 samples of "sure" (20).
const MaxValue = 60

// Check implements treesearch.Evaluator.
func (*Recorded) Check(req treesearch.EvalRequest) (string, string) { return check(req) }

// Evaluate implements treesearch.Evaluator.
func (r *Recorded) Evaluate(_ context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, ok, err := r.Value(req.Path, req.Candidate.Text)
	if err != nil {
		return treesearch.Verdict{}, err
	}
	if !ok {
		return treesearch.Verdict{}, fmt.Errorf("game24: %w: no recorded value for %q", treesearch.ErrUnknownState, req.Candidate.Text)
	}
	state, _, _ := Next(req.Path, req.Candidate.Text)
	return treesearch.Verdict{
		Score: min(v/MaxValue, 1), Goal: strings.HasPrefix(state, "answer:"),
		Report: fmt.Sprintf("GPT-4 value %g (3 samples: sure 20, likely 1, impossible 0.001)", v),
	}, nil
}
