package events

import (
	"fmt"
	"math"
	"strconv"
)

// CloseEnough tells whether two numbers of a tree-search event agree up
// to floating-point rounding: |a − b| ≤ 10⁻⁹ · max(1, |a|, |b|). A
// producer that writes f = 0.3 for g = 0.1 and h = 0.2, or rounds its
// numbers to a few decimals, computed the same sum (float64 gives
// 0.30000000000000004). The producer paths (checkSearchEvent) and the
// treesearch processor compare f with g + h, h with 1 − score and g with
// depth × cost_per_step by it; the stored number is the event's, so live
// and replay order the open set alike.
func CloseEnough(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// ReasonNumber formats x for a refusal's reason, to 12 significant
// digits: 1 − 0.8 is 0.2, not float64's 0.19999999999999996 (a
// walkthrough read the noise as the processor's own arithmetic error).
// CloseEnough's tolerance, 10⁻⁹ relative, is still visible at that
// precision.
func ReasonNumber(x float64) string { return strconv.FormatFloat(x, 'g', 12, 64) }

func searchRefusal(pointer, format string, a ...any) error {
	return &ValidationError{Index: -1, Pointer: pointer, Reason: fmt.Sprintf(format, a...)}
}

// checkSearchEvent refuses, naming the member, a tree-search event that
// breaks a Beam-A* rule its own members decide, whatever the search's
// state: the treesearch processor refuses the same record later, so
// before, POST /v1/events answered 202 and the break showed only as a
// dead letter (a tree-search walkthrough, 2026-12-07). payload is
// checkPayload's decoding. A search.node.expanded.v1's pruned_reason is
// duplicate, prefilter or hard_check; h and f are null exactly when it
// is set; hard_fail is set exactly for hard_check; a duplicate carries
// no score; g + h does not overflow; f = g + h and h = 1 − score up to
// CloseEnough; parent_id is set and depth ≥ 1 (a child is one below its
// parent, the root at 0 is search.started.v1's). A
// search.frontier.decided.v1 has a refund or an overrun, not both
// (max(0, reserved − used) and max(0, used − reserved)). A
// search.completed.v1 names refused_tokens with quota_exhausted only.
// What needs the search's state (g = depth × cost_per_step, the parent's
// depth, max_depth, the quota, the closed set, the beam) is checked by
// the processor only. Producer paths only: the processor applies a log
// written before as it always did (it refuses these too).
func checkSearchEvent(payload any) error {
	switch d := payload.(type) {
	case *SearchNodeData:
		return CheckSearchNode(d)
	case *SearchFrontierDecidedData:
		if d.TokensRefunded > 0 && d.TokensOverrun > 0 {
			return searchRefusal("/data/tokens_refunded", "%d refunded and %d overrun: an expansion is refunded max(0, reserved − used) or overruns max(0, used − reserved), not both", d.TokensRefunded, d.TokensOverrun)
		}
	case *SearchCompletedData:
		if d.RefusedTokens > 0 && d.Outcome != SearchQuotaExhausted {
			return searchRefusal("/data/refused_tokens", "only a quota_exhausted outcome names a refused reservation, not %s", d.Outcome)
		}
	}
	return nil
}

// CheckSearchNode refuses, as a *ValidationError naming the member, a
// search.node.expanded.v1 that breaks a rule its own members decide (see
// checkSearchEvent for the list); nil when it breaks none. The producer
// paths call it through checkSearchEvent, and the treesearch processor
// after its checks against the search's state, so both refuse a node for
// one reason in one wording.
func CheckSearchNode(d *SearchNodeData) error {
	reason := ""
	if d.PrunedReason != nil {
		reason = *d.PrunedReason
	}
	switch reason {
	case "", PrunedDuplicate, PrunedPrefilter, PrunedHardCheck:
	default:
		return searchRefusal("/data/pruned_reason", "%q is not duplicate, prefilter or hard_check", reason)
	}
	if d.ParentID == nil {
		return searchRefusal("/data/parent_id", "required: the node being expanded (a node of this event type is a child; the root is search.started.v1's)")
	}
	if d.Depth < 1 {
		return searchRefusal("/data/depth", "%d: a child is one below its parent, at depth 1 at least (the root, at 0, is search.started.v1's)", d.Depth)
	}
	if (d.H == nil) != (reason != "") || (d.F == nil) != (d.H == nil) {
		return searchRefusal("/data/h", "h and f are null (∞) exactly when pruned_reason is set")
	}
	if d.HardFail != (reason == PrunedHardCheck) {
		return searchRefusal("/data/hard_fail", "hard_fail is true exactly when pruned_reason is %q", PrunedHardCheck)
	}
	if reason == PrunedDuplicate && d.Score != nil {
		return searchRefusal("/data/score", "a duplicate is killed without an evaluator call")
	}
	if d.H == nil {
		return nil
	}
	if math.IsInf(d.G+*d.H, 0) {
		return searchRefusal("/data/h", "g + h overflows float64 (g %v, h %v): f would be ∞, which is a pruned node's (h null)", d.G, *d.H)
	}
	if !CloseEnough(*d.F, d.G+*d.H) {
		return searchRefusal("/data/f", "%s is not g + h = %s", ReasonNumber(*d.F), ReasonNumber(d.G+*d.H))
	}
	if d.Score != nil && !CloseEnough(*d.H, 1-*d.Score) {
		return searchRefusal("/data/h", "%s is not 1 − score = %s", ReasonNumber(*d.H), ReasonNumber(1-*d.Score))
	}
	return nil
}
