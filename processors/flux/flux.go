// Package flux is Chronicle's FLUX evaluator (PAIR design): it scores a
// finished session against the success criteria its producer declared in
// coordination.session.started.v1 and returns the data of
// evaluation.completed.v1. Evaluate is a pure function of its Input: no
// I/O, no clock, no map iteration into output order, so evaluating the same
// session twice gives identical results.
//
// # What is checked
//
// Each criterion carries a machine check (events.Check):
//
//   - tool_call: some successful call (a workflow.task.completed.v1 with
//     success true) of the named tool whose inputs contain the expected
//     arguments → 100, else 0. Containment is a subset match: objects by
//     key, recursively (extra keys in the call are fine); arrays element
//     by element with equal length; numbers numerically (250 = 250.0);
//     strings, booleans and null exactly.
//   - output_contains: the text occurs, case-insensitively and with commas
//     removed from the searched text (tau-bench's own rule), in the
//     session output or in the content of any minute whose actor is
//     "assistant" → 100, else 0.
//   - json_schema: the output parses as JSON and is valid against the
//     schema (JSON Schema 2020-12 by default, formats asserted, no remote
//     references loaded) → 100, else 0.
//   - regex: the Go (RE2) pattern matches the output → 100, else 0.
//   - exact_match: the output equals the text under HotPotQA's answer
//     normalisation (package events/answer) → 100, else 0.
//   - no_other_calls: 100 × (successful calls of the listed tools that
//     subset-match an allowed entry) / (all successful calls of the listed
//     tools); 100 when there are none.
//   - judge: needs an LLM judge, which this package does not run: reported
//     with evaluated=false, listed in Unevaluated, left out of the
//     composite. A check that cannot be run at all (unknown kind, invalid
//     regex or schema) is treated the same way, with the reason in its
//     detail, since the agent is not at fault for a broken criterion.
//
// Every result has a detail saying what was found or is missing, for a
// failed tool_call the closest call and the first argument that differed.
//
// # Scores (PAIR FLUX design)
//
//   - "Per-criterion score 0-100", rounded to 2 decimals.
//   - "Composite = weighted mean of evaluated criteria": Σ weight·score /
//     Σ weight over evaluated criteria, rounded to 2 decimals. When the
//     evaluated weight sums to 0 the composite is the plain mean of the
//     evaluated scores; when nothing is evaluated it is 0.
//   - "A gap for each evaluated criterion below 100", zero-weight ones
//     included (they are informative), with "severity low (score ≥ 90),
//     medium (≥ 75), high (≥ 50) or critical", "impact_on_criteria =
//     100 − score" and "improvement_priority = max(1, floor((100 −
//     score)/10))"; gaps are sorted by priority, highest first, ties in
//     criterion order.
//   - "Recommendation meets_criteria (composite ≥ 95), needs_improvement
//     (≥ 75), significant_gaps (≥ 25), else total_failure." Chronicle adds
//     not_evaluated (issue 11): when no criterion with a weight > 0 was
//     evaluated (no criterion at all, when none has a weight) — for
//     example a session whose only weighted criterion is a judge criterion
//     and no LLM is configured — the composite is no evidence either way,
//     and calling the session a total failure made every such session
//     look failed. Such an evaluation has recommendation not_evaluated
//     (its composite is whatever the evaluated zero-weight criteria give,
//     0 when none) and the deterministic distiller learns nothing from it.
//
// # Why this agrees with tau-bench
//
// tau-bench rewards a session with 1 when the database after the agent's
// calls equals the database after the ground-truth calls and every
// expected output was said to the user. Only successful calls of mutating
// tools change the database (a tool that fails returns "Error: ..." and
// leaves it untouched; lookups never touch it). The taubench importer
// therefore declares, with weight 1, one tool_call criterion per
// ground-truth write, one output_contains criterion per expected output
// and one no_other_calls criterion over the mutating tools allowing only
// the ground-truth writes; ground-truth lookups get weight 0. A session
// meets its criteria exactly when every ground-truth write was done with
// matching arguments, no other write succeeded and every output was said:
// the database and outputs tau-bench compares. A plain comparison of call
// lists misses this: it demands the lookups too, counts failed calls as
// done and is fooled by extra writes. The evaluator never sees the
// producer's outcome or reward.
//
// On the 200 GPT-4o airline sessions shipped with the importer the
// evaluator agrees with tau-bench's reward on 198 (99%), the plain
// canonical-JSON comparison on 154 (77%). Both disagreements are sessions
// tau-bench cut off at its step limit (30 agent turns): it then never
// compares databases (reward_info is null) and the reward stays 0, although
// the database at the cut-off was the expected one.
package flux

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
)

// Input is what the evaluator may see: never the producer's outcome or reward.
type Input struct {
	// SessionID is copied into the evaluation.
	SessionID string
	// Judged holds the scores of judge criteria, by criterion id, parsed
	// from the judge's answers in the log (package judge). A judge
	// criterion without an entry stays unevaluated.
	Judged map[string]Judged
	// Task is the session's original task (for judges; no machine check
	// reads it).
	Task string
	// Criteria are the session's success criteria, in declaration order.
	Criteria []events.Criterion
	// Output is the session's final output.
	Output string
	// Minutes are the session's minutes in order.
	Minutes []events.MinuteData
	// Calls are the session's tool calls (workflow.task.completed.v1) in order.
	Calls []events.TaskCompletedData
}

// Severities of a gap.
const (
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// JudgeWeight multiplies the weight of judge criteria in the composite:
// objective checks (tool calls, outputs, schemas, patterns) decide, an LLM
// judge's opinion counts half as much at equal declared weight.
const JudgeWeight = 0.5

// Judged is a judge criterion's score: the share of rubric checks the
// judge marked passed, 0..100, with what it said.
type Judged struct {
	Score  float64 `json:"score"`
	Detail string  `json:"detail"`
}

// Evaluate scores in against its criteria (see the package documentation
// for the checks and formulas) and returns the data of
// evaluation.completed.v1. Criteria and Gaps are never nil; Unevaluated
// lists, in criterion order, the ids of criteria that were not scored. If
// no weighted criterion could be evaluated the recommendation is
// not_evaluated (see Scores above).
func Evaluate(in Input) events.EvaluationData {
	out := events.EvaluationData{
		SessionID: in.SessionID,
		Criteria:  make([]events.CriterionResult, 0, len(in.Criteria)),
		Gaps:      []events.Gap{},
	}
	var scores, weights []float64
	for _, c := range in.Criteria {
		r := events.CriterionResult{ID: c.ID, Description: c.Description, Kind: c.Check.Kind, Name: c.Check.Name, Weight: c.Weight}
		score, detail, ok := check(c, in)
		r.Detail = detail
		if !ok {
			out.Unevaluated = append(out.Unevaluated, c.ID)
			out.Criteria = append(out.Criteria, r)
			continue
		}
		score = round2(clamp(score))
		r.Evaluated = true
		r.Score = &score
		out.Criteria = append(out.Criteria, r)
		scores = append(scores, score)
		w := c.Weight
		if c.Check.Kind == events.CheckJudge {
			w *= JudgeWeight
		}
		weights = append(weights, w)
		if score < 100 {
			out.Gaps = append(out.Gaps, gap(c, score, detail))
		}
	}
	out.Composite = Composite(scores, weights)
	out.Recommendation = Recommendation(out.Composite)
	if !Scored(in.Criteria, out) {
		out.Recommendation = events.NotEvaluated
	}
	sort.SliceStable(out.Gaps, func(i, j int) bool {
		return out.Gaps[i].ImprovementPriority > out.Gaps[j].ImprovementPriority
	})
	return out
}

func gap(c events.Criterion, score float64, detail string) events.Gap {
	impact := round2(100 - score)
	return events.Gap{
		CriterionID:         c.ID,
		Description:         c.Description,
		Score:               score,
		Severity:            Severity(score),
		ImpactOnCriteria:    impact,
		ImprovementPriority: Priority(score),
		Detail:              detail,
	}
}

// Composite is the weighted mean of scores (PAIR FLUX: "composite =
// weighted mean of evaluated criteria"), rounded to 2 decimals; the plain
// mean when the weights sum to 0; 0 for no scores. Negative weights count
// as 0. Weights so large that the sums overflow (two of 1e308) are
// divided by the largest first, which leaves the mean as it is; before,
// the composite was NaN or +Inf, the evaluation could not be written and
// the session's completion was dead-lettered, leaving it running (a
// walkthrough). Sums that do not overflow are computed as before, bit for
// bit.
func Composite(scores, weights []float64) float64 {
	if len(scores) == 0 {
		return 0
	}
	weight := func(w float64) float64 { return w }
	var sum, wsum, plain float64
	add := func() {
		sum, wsum, plain = 0, 0, 0
		for i, s := range scores {
			w := 0.0
			if i < len(weights) && weights[i] > 0 {
				w = weight(weights[i])
			}
			sum += w * s
			wsum += w
			plain += s
		}
	}
	add()
	if math.IsInf(sum, 0) || math.IsInf(wsum, 0) {
		top := 0.0
		for _, w := range weights {
			top = max(top, w)
		}
		weight = func(w float64) float64 { return w / top }
		add()
	}
	if wsum == 0 {
		return round2(plain / float64(len(scores)))
	}
	return round2(sum / wsum)
}

// Severity of a gap with the given score (PAIR FLUX): "low (score ≥ 90),
// medium (≥ 75), high (≥ 50) or critical".
func Severity(score float64) string {
	switch {
	case score >= 90:
		return SeverityLow
	case score >= 75:
		return SeverityMedium
	case score >= 50:
		return SeverityHigh
	default:
		return SeverityCritical
	}
}

// Priority is a gap's improvement priority (PAIR FLUX):
// "max(1, floor((100 − score)/10))".
func Priority(score float64) int {
	// The epsilon absorbs binary rounding of 2-decimal scores (e.g. 100 −
	// 70.00 must give 3, not 2.9999…).
	p := int(math.Floor(round2(100-score)/10 + 1e-9))
	return max(1, p)
}

// Scored reports whether ev (the evaluation of criteria) has evidence: a
// criterion with weight > 0 was evaluated, or — when no criterion has a
// weight — any criterion was. Evaluate's recommendation is not_evaluated
// otherwise.
func Scored(criteria []events.Criterion, ev events.EvaluationData) bool {
	weighted := map[string]bool{}
	for _, c := range criteria {
		if c.Weight > 0 {
			weighted[c.ID] = true
		}
	}
	for _, r := range ev.Criteria {
		if r.Evaluated && (len(weighted) == 0 || weighted[r.ID]) {
			return true
		}
	}
	return false
}

// Recommendation maps a composite to PAIR FLUX's recommendation:
// "meets_criteria (composite ≥ 95), needs_improvement (≥ 75),
// significant_gaps (≥ 25), else total_failure".
func Recommendation(composite float64) string {
	switch {
	case composite >= 95:
		return events.MeetsCriteria
	case composite >= 75:
		return events.NeedsImprovement
	case composite >= 25:
		return events.SignificantGaps
	default:
		return events.TotalFailure
	}
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func clamp(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return min(x, 100)
}

// check runs one criterion's check: its score, detail, and whether it was
// evaluated at all.
func check(c events.Criterion, in Input) (float64, string, bool) {
	switch c.Check.Kind {
	case events.CheckToolCall:
		s, d := checkToolCall(c.Check, in.Calls)
		return s, d, true
	case events.CheckOutputContains:
		s, d := checkOutputContains(c.Check, in)
		return s, d, true
	case events.CheckExactMatch:
		s, d := checkExactMatch(c.Check, in.Output)
		return s, d, true
	case events.CheckJSONSchema:
		return checkJSONSchema(c.Check, in.Output)
	case events.CheckRegex:
		return checkRegex(c.Check, in.Output)
	case events.CheckNoOtherCalls:
		s, d := checkNoOtherCalls(c.Check, in.Calls)
		return s, d, true
	case events.CheckJudge:
		if j, ok := in.Judged[c.ID]; ok {
			return j.Score, j.Detail, true
		}
		return 0, "judge criterion: no judge answer in the log (no LLM configured, not judged yet, or the answer was dead-lettered: chronicle deadletter list names it)", false
	default:
		return 0, fmt.Sprintf("unknown check kind %q", c.Check.Kind), false
	}
}

// truncate shortens s to n runes with an ellipsis, on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
