package game24

import (
	"context"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// LLM proposes and evaluates with a chat model over any OpenAI-compatible
// endpoint (distill.LLM: temperature 0, retries, rate limit), with Tree of
// Thoughts' Game of 24 prompts after the runner's goal-pinned prompt
// (which starts with "Primary Objective: <goal>" and carries the path
// summary). The objective checks are the arithmetic ones.
type LLM struct {
	Client *distill.LLM
	// Samples is the number of value samples per candidate (default 3, as
	// ToT's value3); each answer's last word counts sure 20, likely 1,
	// impossible 0.001, and score = the sum / (20 × Samples).
	Samples int
}

// Component implements treesearch.Proposer and treesearch.Evaluator.
func (l *LLM) Component() events.SearchComponent {
	return events.SearchComponent{Name: "game24-llm:" + l.Client.Model(), Version: "1"}
}

// ProposeInstruction follows ToT's propose prompt: numbers left in, next
// steps out, one per line; once 24 is left, the answer.
func ProposeInstruction(state string) string {
	if expr, ok := reached(state); ok {
		return "Only 24 is left, reached by " + expr + ". Write the answer as one line: Answer: <expression with the original numbers> = 24\n"
	}
	return "Input: " + state + "\nPossible next steps, one per line, each as \"a op b = c (left: <numbers left>)\":\n"
}

// ValueInstruction follows ToT's value prompt.
func ValueInstruction() string {
	return "Evaluate if the numbers left after this step can reach 24. End your answer with one word: sure, likely or impossible.\n"
}

// MaxAnswerBytes is the longest model answer a Game of 24 step takes:
// 16 KiB. Tree of Thoughts' GPT-4 answers are a few hundred bytes (a
// proposal is a handful of lines, a value a sentence and a word). A longer
// one is refused before anything counts its tokens or logs it: a 50 KB
// answer without whitespace took the tokenizer over a second (its
// byte-pair merge is quadratic in a word's length), a 400 KB one minutes,
// and an answer too large for one event aborted the search saying only
// "event 0: /: … bytes encoded" (an LLM-endpoint walkthrough,
// 2026-12-03).
const MaxAnswerBytes = 16 << 10

// checkAnswer is the refusal of an answer above MaxAnswerBytes.
func checkAnswer(what, raw string) error {
	if len(raw) > MaxAnswerBytes {
		return fmt.Errorf("game24: %s: the model's answer is %d bytes, above the %d a Game of 24 step takes (game24.MaxAnswerBytes): is --llm-model a chat model following the prompt?", what, len(raw), MaxAnswerBytes)
	}
	return nil
}

// Propose implements treesearch.Proposer: one completion, one candidate
// per non-empty line.
func (l *LLM) Propose(ctx context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	last := req.Path[len(req.Path)-1]
	raw, err := l.Client.Complete(ctx, req.Prompt+ProposeInstruction(last.State))
	if err != nil {
		return treesearch.Proposal{}, fmt.Errorf("game24: propose: %w", err)
	}
	if err := checkAnswer("propose", raw); err != nil {
		return treesearch.Proposal{}, err
	}
	var lines []string
	for _, line := range strings.Split(raw, "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, strings.TrimSpace(line)+"\n")
		}
	}
	p := ProposalOf(req.Path, lines)
	p.Raw = raw
	return p, nil
}

// Check implements treesearch.Evaluator.
func (*LLM) Check(req treesearch.EvalRequest) (string, string) { return check(req) }

// Verdicts are the value words of ToT's value prompt and their weights.
var Verdicts = map[string]float64{"sure": 20, "likely": 1, "impossible": 0.001}

// Evaluate implements treesearch.Evaluator.
func (l *LLM) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	n := l.Samples
	if n <= 0 {
		n = 3
	}
	sum := 0.0
	var report strings.Builder
	for i := 0; i < n; i++ {
		raw, err := l.Client.Complete(ctx, req.Prompt+ValueInstruction())
		if err != nil {
			return treesearch.Verdict{}, fmt.Errorf("game24: value: %w", err)
		}
		if err := checkAnswer("value", raw); err != nil {
			return treesearch.Verdict{}, err
		}
		words := strings.Fields(strings.ToLower(raw))
		if len(words) > 0 {
			sum += Verdicts[strings.Trim(words[len(words)-1], ".!")]
		}
		report.WriteString(raw + "\n")
	}
	state, _, _ := Next(req.Path, req.Candidate.Text)
	return treesearch.Verdict{Score: min(sum/(20*float64(n)), 1), Goal: strings.HasPrefix(state, "answer:"), Report: report.String()}, nil
}

// Prompts implements treesearch.PromptSet: the templates of the propose and
// value prompts, part of a solver lock.
func (*LLM) Prompts() map[string]string {
	return map[string]string{"propose": ProposeInstruction("%s"), "answer": ProposeInstruction(ReachedState("%s")), "value": ValueInstruction()}
}
