package treesearch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Step is one node of the path from the root to the node being expanded.
type Step struct {
	NodeID    string
	Depth     int
	Candidate string // the step's text ("" for the root)
	State     string // the canonical state after the step
}

// Candidate is one proposal: its text and the canonical state it leads to
// (whose SHA-256 is the state digest used for dedup).
type Candidate struct {
	Text  string
	State string
}

// ProposeRequest asks a Proposer for up to K candidates expanding the last
// node of Path. Prompt is what the runner built for it: it starts with
// "Primary Objective: <goal>" (goal pinning) and carries the path summary
// (under PathSummaryTokens tokens).
type ProposeRequest struct {
	Goal   string
	Prompt string
	Path   []Step
	K      int
}

// Proposal is a Proposer's answer. Raw is the model's raw answer, counted
// as output tokens. Unexpandable says the proposer has nothing for this
// node (the recorded proposer outside the recorded tree).
type Proposal struct {
	Candidates   []Candidate
	Raw          string
	Unexpandable bool
}

// Proposer generates the candidates of an expansion. It must be
// deterministic (temperature 0, recorded output, or arithmetic): the runner
// recomputes an interrupted expansion after a crash and relies on getting
// the same candidates in the same order.
type Proposer interface {
	Component() events.SearchComponent
	Propose(ctx context.Context, req ProposeRequest) (Proposal, error)
}

// EvalRequest asks about one candidate of the last node of Path. Prompt
// starts with "Primary Objective: <goal>".
type EvalRequest struct {
	Goal      string
	Prompt    string
	Path      []Step
	Candidate Candidate
}

// Verdict is an evaluator's judgement: Score in [0, 1] (h = 1 − Score),
// Goal when the candidate solves the task, NeedsHuman to pause the search
// on it, Report the evaluator's explanation or raw answer (counted as
// output tokens).
type Verdict struct {
	Score      float64
	Goal       bool
	NeedsHuman bool
	Report     string
}

// Evaluator judges candidates. Check runs the cheap pre-filter and the
// objective hard checks without any model call: it returns "" when the
// candidate passes, else events.PrunedPrefilter or events.PrunedHardCheck
// with a report; Evaluate is the (possibly costly) multi-signal judgement,
// called only for candidates that are neither duplicates nor rejected by
// Check.
type Evaluator interface {
	Component() events.SearchComponent
	Check(req EvalRequest) (reason, report string)
	Evaluate(ctx context.Context, req EvalRequest) (Verdict, error)
}

// ErrUnknownState is wrapped by recorded components asked about a state
// their record does not hold.
var ErrUnknownState = errors.New("state outside the recorded tree")

// PathSummaryTokens is the path-summary safeguard of the design: the path
// given to the proposer stays under 2,000 tokens at any depth.
const PathSummaryTokens = 2000

// Tokenizer counts tokens offline with OpenAI's cl100k_base BPE
// (tiktoken-go, with the BPE file embedded by tiktoken-go-loader, so no
// network is needed).
type Tokenizer struct{ enc *tiktoken.Tiktoken }

var (
	tokOnce sync.Once
	tok     *Tokenizer
	tokErr  error
)

// CL100K returns the shared cl100k_base tokenizer.
func CL100K() (*Tokenizer, error) {
	tokOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		enc, err := tiktoken.GetEncoding("cl100k_base")
		if err != nil {
			tokErr = fmt.Errorf("treesearch: tokenizer: %w", err)
			return
		}
		tok = &Tokenizer{enc: enc}
	})
	return tok, tokErr
}

// Count is the number of cl100k_base tokens of s.
func (t *Tokenizer) Count(s string) int64 {
	if s == "" {
		return 0
	}
	return int64(len(t.enc.Encode(s, nil, nil)))
}

// PinGoal is the goal-pinning safeguard: every proposer and evaluator
// prompt starts with this line.
func PinGoal(goal string) string { return "Primary Objective: " + goal + "\n" }

// PathSummary renders the steps of path (root excluded) one per line, and
// when that exceeds budget tokens keeps the first step and the latest ones,
// replacing the middle with a line saying how many steps were left out, so
// the summary stays under budget at any depth.
func PathSummary(t *Tokenizer, path []Step, budget int64) string {
	var lines []string
	for _, s := range path {
		if s.Candidate != "" {
			lines = append(lines, strings.TrimRight(s.Candidate, "\n"))
		}
	}
	render := func(ls []string) string { return strings.Join(ls, "\n") }
	out := render(lines)
	if t.Count(out) < budget {
		return out
	}
	// keep the first step and as many of the latest as fit: count each
	// line once, then confirm the rendering's count
	counts := make([]int64, len(lines))
	for i, l := range lines {
		counts[i] = t.Count(l+"\n") + 1
	}
	room := budget - counts[0] - 16 // the omission line
	keep := 0
	for sum := int64(0); keep < len(lines)-1 && sum+counts[len(lines)-1-keep] < room; keep++ {
		sum += counts[len(lines)-1-keep]
	}
	for ; keep >= 0; keep-- {
		ls := append([]string{lines[0], fmt.Sprintf("[… %d earlier steps omitted …]", len(lines)-1-keep)}, lines[len(lines)-keep:]...)
		if out = render(ls); t.Count(out) < budget {
			return out
		}
	}
	// a single step longer than the budget: cut it by tokens
	enc := t.enc.Encode(lines[len(lines)-1], nil, nil)
	return "[… path omitted …]\n" + t.enc.Decode(enc[len(enc)-int(budget)/2:])
}
