package pair

import (
	"fmt"
	"regexp"
	"strings"
)

// Loop statuses of a session in the PAIR loop (LoopState.Status).
const (
	// LoopSuccess: the session's composite is at or above PassComposite.
	LoopSuccess = "SUCCESS"
	// LoopMaxIterations: below PassComposite at iteration MaxIterations.
	LoopMaxIterations = "MAX_ITERATIONS_REACHED"
	// LoopRevisionReady: below PassComposite, a revision is written for
	// the next attempt.
	LoopRevisionReady = "REVISION_READY"
	// LoopAwaitingContext: evaluated below PassComposite, PAIR retrieval
	// has not answered yet.
	LoopAwaitingContext = "AWAITING_CONTEXT"
	// LoopImproved: a revision of this session met its criteria (the pair
	// worker's pair_improvement_completed minute on it). Only GET
	// /v1/sessions/{id}/improvement answers it, next to improved_by; the
	// pairloop row keeps the status it had (REVISION_READY, usually).
	LoopImproved = "IMPROVED"
	// LoopAwaitingEvaluation: the session has no evaluation yet (it has
	// not completed, or its evaluation is not projected yet), so the loop
	// has nothing to start from. Only the routes answer it (GET
	// /v1/sessions/{id}/improvement, POST …/improve's 202); no pairloop
	// row holds it. Before, such a session showed AWAITING_CONTEXT, which
	// means evaluated below 95 (found by an agent-runtime walkthrough).
	LoopAwaitingEvaluation = "AWAITING_EVALUATION"
	// LoopNotEvaluated: the session's evaluation is not_evaluated (no
	// criterion with a weight could be scored, e.g. its only weighted
	// criterion is a judge one and no LLM is configured): its composite is
	// no evidence either way, so PAIR retrieves no context and writes no
	// revision for it. Before, such a session was revised as if it had
	// failed ("Iteration 1 scored 0.00, below 95, with 0 weighted gaps":
	// a walkthrough).
	LoopNotEvaluated = "NOT_EVALUATED"
)

// Revision is the deterministic informed revision of a session below
// PassComposite (PAIR design: "what should have been done differently,
// which assignments were missing, which coordination rules would have
// helped"), built from its pair.context.retrieved.v1 alone — no model, so
// the same context always gives the same revision.
type Revision struct {
	SessionID string `json:"session_id"`
	// NextIteration is the iteration of the revised attempt.
	NextIteration int `json:"next_iteration"`
	// FollowSequence is the tool sequence to follow: the numbered steps of
	// the best retrieved coordination pattern or strategy (highest success
	// rate, then relevance) over every gap, as tool(argument names).
	FollowSequence []string `json:"follow_sequence,omitempty"`
	// FollowFrom names where FollowSequence comes from (memory or pattern
	// id).
	FollowFrom string `json:"follow_from,omitempty"`
	// MissingWrites are the weighted tool_call gaps: the calls the
	// session should have made (their criterion descriptions).
	MissingWrites []string `json:"missing_writes,omitempty"`
	// Rules are the coordination rules the other gaps suggest.
	Rules []string `json:"rules,omitempty"`
	// Recommendations are the design's per-gap recommendation texts.
	Recommendations []GapRecommendation `json:"recommendations"`
	// Rationale explains the revision in one paragraph.
	Rationale string `json:"rationale"`
	// EstimatedImprovement is the expected composite gain (points):
	// (100 − composite) × Σ_covered p_g·(100 − score_g) / Σ_g (100 −
	// score_g), where a gap is covered when a pattern was retrieved for it
	// and p_g is its best group's success rate (its confidence when the
	// rate is unknown). An estimate, not a measurement.
	EstimatedImprovement float64 `json:"estimated_improvement"`
}

// GapRecommendation is the PAIR design's recommendation for one gap:
// "Based on N similar past coordination decisions: success rate …,
// consider …, confidence …".
type GapRecommendation struct {
	CriterionID string `json:"criterion_id"`
	Text        string `json:"text"`
}

var stepLine = regexp.MustCompile(`^\s*\d+\.\s+(.+?)\s*$`)

// sequenceOf reads the numbered steps ("1. tool(a, b)") of an example's
// content.
func sequenceOf(content string) []string {
	var out []string
	for _, l := range strings.Split(content, "\n") {
		if m := stepLine.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// ToolOf is the tool name of a step "tool(a, b) ×2".
func ToolOf(step string) string {
	if i := strings.IndexByte(step, '('); i > 0 {
		return step[:i]
	}
	return strings.Fields(step + " ")[0]
}

// Revise builds the deterministic revision of context c (see Revision).
// A context that stops the loop (stop_iteration_limit) gets a revision
// with no next iteration (0) and a rationale saying so.
func Revise(c Context) Revision {
	r := Revision{SessionID: c.SessionID, NextIteration: c.NextIteration, Recommendations: []GapRecommendation{}}
	bestRate, bestRel := -1.0, -1.0
	var deficit, covered float64
	for _, g := range c.Gaps {
		impact := 100 - g.Score
		deficit += impact
		switch {
		case strings.HasPrefix(g.Description, "call "):
			r.MissingWrites = append(r.MissingWrites, strings.TrimPrefix(g.Description, "call "))
		case strings.HasPrefix(g.Description, "no "):
			r.Rules = append(r.Rules, "Only "+strings.TrimPrefix(g.Description, "no ")+": make no other write.")
		case g.Description != "":
			r.Rules = append(r.Rules, "Make sure to "+g.Description+".")
		default:
			r.Rules = append(r.Rules, "Meet criterion "+g.CriterionID+".")
		}
		if len(g.Patterns) == 0 {
			r.Recommendations = append(r.Recommendations, GapRecommendation{g.CriterionID, "No similar past coordination decision found: revise from the gap alone."})
			continue
		}
		best := g.Patterns[0]
		p := best.Confidence
		rate := "unknown"
		if best.SuccessRate != nil {
			p = *best.SuccessRate
			rate = fmt.Sprintf("%.0f%%", 100**best.SuccessRate)
		}
		covered += p * impact
		n := best.Sessions
		r.Recommendations = append(r.Recommendations, GapRecommendation{g.CriterionID,
			fmt.Sprintf("Based on %d similar past coordination decisions: success rate %s, consider %q, confidence %.2f.", n, rate, best.Examples[0].Title, best.Confidence)})
		for _, grp := range g.Patterns {
			for _, ex := range grp.Examples {
				seq := sequenceOf(ex.Content)
				if len(seq) == 0 {
					continue
				}
				er := ex.Confidence
				if ex.SuccessRate != nil {
					er = *ex.SuccessRate
				}
				if er > bestRate || er == bestRate && ex.Relevance > bestRel {
					bestRate, bestRel = er, ex.Relevance
					r.FollowSequence, r.FollowFrom = seq, ex.MemoryID
				}
			}
		}
	}
	if deficit > 0 {
		r.EstimatedImprovement = roundTo((100-c.Composite)*covered/deficit, 2)
	}
	var b strings.Builder
	switch {
	case c.Recommendation == StopIterationLimit:
		fmt.Fprintf(&b, "Iteration %d was the last of the loop (at most %d): no further attempt. ", c.Iteration, MaxIterations)
	default:
		fmt.Fprintf(&b, "Iteration %d scored %.2f, below %.0f, with %d weighted gaps. ", c.Iteration, c.Composite, PassComposite, len(c.Gaps))
	}
	if len(r.MissingWrites) > 0 {
		fmt.Fprintf(&b, "It missed %d required call(s): %s. ", len(r.MissingWrites), strings.Join(r.MissingWrites, "; "))
	}
	if len(r.FollowSequence) > 0 {
		fmt.Fprintf(&b, "A similar attempt that succeeded (%s, success rate %.2f) called: %s. ", r.FollowFrom, bestRate, strings.Join(r.FollowSequence, " → "))
	} else {
		b.WriteString("No successful tool sequence was retrieved. ")
	}
	if len(r.Rules) > 0 {
		fmt.Fprintf(&b, "Rules: %s", strings.Join(r.Rules, " "))
	}
	r.Rationale = strings.TrimSpace(b.String())
	return r
}

func roundTo(x float64, d int) float64 {
	p := 1.0
	for range d {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}
