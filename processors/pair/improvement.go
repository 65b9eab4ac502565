package pair

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/memories"
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
// criteria after its parent (parent evaluation) did not: its tags are
// ImprovementTag and the fixed criteria's check names (else kinds) as the
// parent's evaluation names them (events.CriterionResult); outcome success, source distilled, source_session the improved session,
// id the content address in scope (distill.MemoryID), initial_confidence
// final_score / 100 (the improved composite / 100, memories.Clamp: 6
// decimals; PAIR design). The content holds the fixed gaps and the improved
// attempt's successful tool sequence with argument names (not values), so
// equal improvements merge (the memory keeps the confidence of the first).
func Improvement(scope string, improved events.EvaluationData, iteration int, calls []events.TaskCompletedData, parent events.EvaluationData) events.MemoryRecordedData {
	fixed := FixedGaps(parent, improved)
	byID := map[string]events.CriterionResult{}
	for _, c := range parent.Criteria {
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
			tag := byID[g.CriterionID].Name
			if tag == "" {
				tag = byID[g.CriterionID].Kind
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
	conf := ImprovementConfidence(improved.Composite)
	return events.MemoryRecordedData{
		MemoryID: distill.MemoryID(scope, m.Title, m.Content), Title: m.Title, Description: m.Description, Content: m.Content,
		Outcome: events.OutcomeSuccess, Tags: tags, Source: "distilled", SourceSession: improved.SessionID,
		InitialConfidence: &conf,
	}
}

// ImprovementConfidence is the confidence of a pair_improvement_completed
// memory (PAIR design: "a memory whose confidence is final_score / 100"):
// composite / 100, bounded to [0, 1] and rounded to 6 decimals as the
// memory bank stores it (memories.Clamp).
func ImprovementConfidence(composite float64) float64 { return memories.Clamp(composite / 100) }

// ImprovementMinute is the data (MinuteData.Data) of the
// coordination.minute.recorded.v1 with event_type
// pair_improvement_completed that the pair worker writes on the parent
// session when a revised attempt meets its criteria (PAIR design: "a
// successful improvement is recorded as a coordination minute").
type ImprovementMinute struct {
	// ImprovedSession is the revised attempt that reached PassComposite;
	// Iteration is its iteration.
	ImprovedSession string `json:"improved_session"`
	Iteration       int    `json:"iteration"`
	// ParentComposite is the parent's (this session's) composite, FinalScore
	// the improved attempt's; Improvement is their difference (points).
	ParentComposite float64 `json:"parent_composite"`
	FinalScore      float64 `json:"final_score"`
	Improvement     float64 `json:"improvement"`
	// FixedGaps are the criterion ids of the parent's weighted gaps the
	// improved attempt fixed (FixedGaps), in priority order.
	FixedGaps []string `json:"fixed_gaps"`
	// MemoryID and Confidence name the pair_improvement_completed memory
	// written with the minute and its initial confidence.
	MemoryID   string  `json:"memory_id"`
	Confidence float64 `json:"confidence"`
}

// MinuteActor is the actor of the pair_improvement_completed minute.
const MinuteActor = "chronicle/pair"

// Minute is the coordination minute of a successful improvement: event_type
// ImprovementTag, actor MinuteActor, data ImprovementMinute, memory_note
// naming the memory m. It belongs to the parent session (see the package
// documentation for why the parent).
func Minute(improved events.EvaluationData, iteration int, parent events.EvaluationData, m events.MemoryRecordedData) (events.MinuteData, error) {
	d := ImprovementMinute{
		ImprovedSession: improved.SessionID, Iteration: iteration,
		ParentComposite: parent.Composite, FinalScore: improved.Composite,
		Improvement: roundTo(improved.Composite-parent.Composite, 4),
		FixedGaps:   []string{}, MemoryID: m.MemoryID, Confidence: ImprovementConfidence(improved.Composite),
	}
	for _, g := range FixedGaps(parent, improved) {
		d.FixedGaps = append(d.FixedGaps, g.CriterionID)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return events.MinuteData{}, err
	}
	note := fmt.Sprintf("Revised attempt %s (iteration %d) met its criteria: %.2f → %.2f; recorded as memory %s, confidence %.6g.",
		improved.SessionID, iteration, parent.Composite, improved.Composite, m.MemoryID, d.Confidence)
	return events.MinuteData{EventType: ImprovementTag, Actor: MinuteActor, Data: raw, MemoryNote: note}, nil
}

func describe(g events.Gap) string {
	if d := strings.TrimSpace(g.Description); d != "" {
		return d
	}
	return g.CriterionID
}
