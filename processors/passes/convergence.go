package passes

import "github.com/chronicle-dev/chronicle/events"

// Convergence thresholds of the multi-pass reasoning design (phase C): a
// pass has converged when completeness ≥ 0.95, coherence ≥ 0.90 and
// consistency ≥ 0.90.
const (
	MinCompleteness = 0.95
	MinCoherence    = 0.90
	MinConsistency  = 0.90
)

// Reason codes of a Verdict.
const (
	ReasonConverged        = "CONVERGED"
	ReasonIncomplete       = "COMPLETENESS_BELOW_0.95"
	ReasonIncoherent       = "COHERENCE_BELOW_0.90"
	ReasonInconsistent     = "CONSISTENCY_BELOW_0.90"
	ReasonTTLExhausted     = "TTL_EXHAUSTED"
	ReasonValidationErrors = "VALIDATION_ERRORS"
	ReasonPassFailed       = "PASS_FAILED"
	// ReasonClaimDisagrees: the engine's own converged flag differs from
	// the thresholds' verdict (accepted; Chronicle's verdict stands).
	ReasonClaimDisagrees = "CLAIM_DISAGREES"
)

// Verdict is Chronicle's convergence judgement of a pass.
type Verdict struct {
	Converged    bool     `json:"converged"`
	Completeness float64  `json:"completeness"`
	Coherence    float64  `json:"coherence"`
	Consistency  float64  `json:"consistency"`
	Claimed      bool     `json:"claimed"`
	ReasonCodes  []string `json:"reason_codes"`
	// EngineReasonCodes are the codes the engine reported itself.
	EngineReasonCodes []string `json:"engine_reason_codes,omitempty"`
}

// Judge applies the thresholds to a pass's scores. A pass converges when
// all three scores meet them and it did not fail (status error); reason
// codes name each threshold missed, and add TTL_EXHAUSTED, VALIDATION_ERRORS
// (an issue of severity error) and CLAIM_DISAGREES as they apply.
func Judge(c events.ConvergenceScores, status string, ttlExhausted bool, issues []events.ValidationIssue) Verdict {
	v := Verdict{Completeness: c.Completeness, Coherence: c.Coherence, Consistency: c.Consistency, Claimed: c.Converged, EngineReasonCodes: c.ReasonCodes}
	v.Converged = true
	if c.Completeness < MinCompleteness {
		v.Converged = false
		v.ReasonCodes = append(v.ReasonCodes, ReasonIncomplete)
	}
	if c.Coherence < MinCoherence {
		v.Converged = false
		v.ReasonCodes = append(v.ReasonCodes, ReasonIncoherent)
	}
	if c.Consistency < MinConsistency {
		v.Converged = false
		v.ReasonCodes = append(v.ReasonCodes, ReasonInconsistent)
	}
	if status == events.PassError {
		v.Converged = false
		v.ReasonCodes = append(v.ReasonCodes, ReasonPassFailed)
	}
	if v.Converged {
		v.ReasonCodes = append([]string{ReasonConverged}, v.ReasonCodes...)
	}
	if ttlExhausted {
		v.ReasonCodes = append(v.ReasonCodes, ReasonTTLExhausted)
	}
	for _, is := range issues {
		if is.Severity == "error" {
			v.ReasonCodes = append(v.ReasonCodes, ReasonValidationErrors)
			break
		}
	}
	if v.Claimed != v.Converged {
		v.ReasonCodes = append(v.ReasonCodes, ReasonClaimDisagrees)
	}
	return v
}
