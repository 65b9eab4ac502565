package flux

import (
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/answer"
)

// checkExactMatch: "the output equals text under HotPotQA's answer
// normalisation (answer.Normalize) → 100 else 0".
func checkExactMatch(ch events.Check, output string) (float64, string) {
	if answer.ExactMatch(output, ch.Text) {
		return 100, fmt.Sprintf("output %q matches %q (HotPotQA exact match)", truncate(output, 80), ch.Text)
	}
	return 0, fmt.Sprintf("output %q does not match %q (normalised %q vs %q)", truncate(output, 80), ch.Text, answer.Normalize(output), answer.Normalize(ch.Text))
}
