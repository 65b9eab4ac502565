package sessions

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/chronicle-dev/chronicle/processors/flux"
)

var checkLine = regexp.MustCompile(`(?m)^\s*[-*]\s*\[([ xX])\]\s*(.*?)\s*$`)

// JudgeScore parses a judge answer (the checklist of package judge's
// JudgePrompt): exactly one "- [x]"/"- [ ]" line per rubric item, in order;
// the score is 100 × passed / items. A malformed answer is a processing
// error (the event is dead-lettered with the reason).
func JudgeScore(rubric []string, answer string) (flux.Judged, error) {
	lines := checkLine.FindAllStringSubmatch(answer, -1)
	if len(lines) != len(rubric) {
		return flux.Judged{}, fmt.Errorf("judge answer has %d checklist lines, the rubric %d", len(lines), len(rubric))
	}
	passed := 0
	var failed []string
	for i, l := range lines {
		if l[1] != " " {
			passed++
		} else {
			failed = append(failed, rubric[i])
		}
	}
	detail := fmt.Sprintf("judge: %d of %d checks passed", passed, len(rubric))
	if len(failed) > 0 {
		detail += "; failed: " + strings.Join(failed, "; ")
	}
	return flux.Judged{Score: 100 * float64(passed) / float64(len(rubric)), Detail: detail}, nil
}
