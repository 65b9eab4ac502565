package pair

import (
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
)

// FixedGaps are the weighted gaps of the parent evaluation that the
// improved evaluation fixed: their criterion has no gap, or a higher score,
// in improved. In the parent's priority order.
func FixedGaps(parent, improved events.EvaluationData) []events.Gap {
	now := map[string]float64{}
	for _, g := range improved.Gaps {
		now[g.CriterionID] = g.Score
	}
	var out []events.Gap
	for _, g := range weightedAll(parent) {
		if s, still := now[g.CriterionID]; !still || s > g.Score {
			out = append(out, g)
		}
	}
	return out
}

// weightedAll is WeightedGaps without the MaxGaps bound.
func weightedAll(ev events.EvaluationData) []events.Gap {
	weight := map[string]float64{}
	anyWeight := false
	for _, c := range ev.Criteria {
		weight[c.ID] = c.Weight
		anyWeight = anyWeight || c.Weight > 0
	}
	var out []events.Gap
	for _, g := range ev.Gaps {
		if !anyWeight || weight[g.CriterionID] > 0 {
			out = append(out, g)
		}
	}
	return out
}

// Improvement is the pair_improvement_completed memory of a session
// (evaluation improved, at iteration, with its tool calls) that met its
// criteria after its parent (parent evaluation and criteria) did not:
// outcome success, source distilled, source_session the improved session,
// id the content address in scope (distill.MemoryID). The content holds the
// fixed gaps and the improved attempt's successful tool sequence with
// argument names (not values), so equal improvements merge.
func Improvement(scope string, improved events.EvaluationData, iteration int, calls []events.TaskCompletedData, parent events.EvaluationData, parentCriteria []events.Criterion) events.MemoryRecordedData {
	fixed := FixedGaps(parent, improved)
	byID := map[string]events.Criterion{}
	for _, c := range parentCriteria {
		byID[c.ID] = c
	}
	tags := []string{ImprovementTag}
	seen := map[string]bool{}
	var b strings.Builder
	title := "PAIR improvement: composite below 95 to ≥ 95"
	if len(fixed) > 0 {
		title = "PAIR improvement: " + describe(fixed[0])
		b.WriteString("Gaps fixed by the revised attempt:\n")
		for _, g := range fixed {
			fmt.Fprintf(&b, "- %s (was %s, score %.0f)\n", describe(g), g.Severity, g.Score)
			tag := byID[g.CriterionID].Check.Name
			if tag == "" {
				tag = byID[g.CriterionID].Check.Kind
			}
			if tag != "" && !seen[tag] {
				seen[tag] = true
				tags = append(tags, tag)
			}
		}
	}
	if st := distill.Steps(calls); len(st) > 0 {
		b.WriteString("Tool sequence of the attempt that met the criteria:\n")
		for i, s := range st {
			fmt.Fprintf(&b, "%d. %s\n", i+1, s)
		}
	}
	b.WriteString("Revise the failed attempt the same way: address each gap above, keep what already met its criterion.")
	what := "its gaps"
	if len(fixed) > 0 {
		what = describe(fixed[0])
		if len(fixed) > 1 {
			what += fmt.Sprintf(" and %d more gaps", len(fixed)-1)
		}
	}
	desc := fmt.Sprintf("Iteration %d met its criteria (composite %.2f → %.2f) after fixing %s.", iteration, parent.Composite, improved.Composite, what)
	m := distill.Clamp(distill.Memory{Title: title, Description: desc, Content: b.String()})
	return events.MemoryRecordedData{
		MemoryID: distill.MemoryID(scope, m.Title, m.Content), Title: m.Title, Description: m.Description, Content: m.Content,
		Outcome: events.OutcomeSuccess, Tags: tags, Source: "distilled", SourceSession: improved.SessionID,
	}
}

func describe(g events.Gap) string {
	if d := strings.TrimSpace(g.Description); d != "" {
		return d
	}
	return g.CriterionID
}
