package workflows

import (
	"fmt"
	"strconv"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Adaptive speculation threshold (PML design: "adaptive thresholds start
// conservative at 0.92 and move with the observed acceptance over 50–100
// executions, aiming at > 95% success and < 10% waste").
const (
	// InitialThreshold is where a policy starts (0.92).
	InitialThreshold = 0.92
	// ThresholdFloor and ThresholdCeiling bound it: never below the
	// design's speculation threshold 0.85, never above 0.99.
	ThresholdFloor   = 0.85
	ThresholdCeiling = 0.99
	// PolicyWindow is the number of latest feedbacks kept (100);
	// PolicyMinWindow the number needed before the threshold moves (50).
	PolicyWindow    = 100
	PolicyMinWindow = 50
	// TargetSuccess and MaxWaste are the design's aims: accepted share
	// ≥ 0.95, rejected share of speculative executions < 0.10.
	TargetSuccess = 0.95
	MaxWaste      = 0.10
)

// the thresholds in hundredths
const initialCents, floorCents, ceilingCents = 92, 85, 99

// Policy is the adaptive speculation threshold of one policy in a scope,
// fed by workflow.suggestion.feedback.v1. After each feedback, once the
// window holds at least PolicyMinWindow feedbacks: success = accepted
// share of the window, waste = rejected share of its speculative ones; the
// threshold moves down 0.01 (to ThresholdFloor at least) when success ≥
// TargetSuccess and waste < MaxWaste, else up 0.01 (to ThresholdCeiling at
// most). It is kept in hundredths so replay gives the same bits.
type Policy struct {
	Policy string `json:"policy"`
	Scope  string `json:"scope"`
	// Threshold is the speculation threshold now.
	Threshold float64 `json:"threshold"`
	// Cents is Threshold in hundredths.
	Cents int `json:"threshold_cents"`
	// Window holds the latest feedbacks, oldest first: 'a' accepted, 'r'
	// rejected; upper case for speculative executions.
	Window    string  `json:"window"`
	Feedbacks int     `json:"feedbacks"`
	Success   float64 `json:"success"`
	Waste     float64 `json:"waste"`
	UpdatedAt string  `json:"updated_at,omitempty"`
}

func policyKey(key string) string { return "th/" + key }

// suggestionKey is the row recording that suggestion sid of the policy
// with key has its feedback (the event id that gave it).
func suggestionKey(key, sid string) string { return "sg/" + keyID(key, sid) }

// NewPolicy is a policy before any feedback.
func NewPolicy(scope, id string) Policy {
	return Policy{Policy: id, Scope: scope, Threshold: InitialThreshold, Cents: initialCents}
}

// observe applies one feedback.
func (p *Policy) observe(accepted, speculative bool) {
	c := byte('r')
	if accepted {
		c = 'a'
	}
	if speculative {
		c -= 'a' - 'A'
	}
	p.Window += string(c)
	if len(p.Window) > PolicyWindow {
		p.Window = p.Window[len(p.Window)-PolicyWindow:]
	}
	p.Feedbacks++
	acc, spec, wasted := 0, 0, 0
	for i := 0; i < len(p.Window); i++ {
		switch p.Window[i] {
		case 'a':
			acc++
		case 'A':
			acc++
			spec++
		case 'R':
			spec++
			wasted++
		}
	}
	p.Success = float64(acc) / float64(len(p.Window))
	p.Waste = 0
	if spec > 0 {
		p.Waste = float64(wasted) / float64(spec)
	}
	if len(p.Window) >= PolicyMinWindow {
		if p.Success >= TargetSuccess && p.Waste < MaxWaste {
			p.Cents = max(floorCents, p.Cents-1)
		} else {
			p.Cents = min(ceilingCents, p.Cents+1)
		}
	}
	p.Threshold = float64(p.Cents) / 100
}

func applyFeedback(tx *projections.Tx, key string, env *events.Envelope) error {
	var d events.SuggestionFeedbackData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if d.SuggestionID != "" {
		// one verdict per suggestion: a second click, or a retry under a
		// new event id, must not count twice
		if _, used, err := tx.Get(suggestionKey(key, d.SuggestionID)); err != nil {
			return err
		} else if used {
			return fmt.Errorf("policy %s: %w", key, fieldError("/data/suggestion_id", "%q: %w (its feedback is recorded)", d.SuggestionID, ErrDuplicateID))
		}
		if err := tx.Set(suggestionKey(key, d.SuggestionID), []byte(env.ID)); err != nil {
			return err
		}
	}
	scope, id, _ := events.SplitEntityKey(key)
	p := NewPolicy(scope, id)
	if _, err := tx.GetJSON(policyKey(key), &p); err != nil {
		return err
	}
	p.observe(d.Accepted, d.Mode == "speculative_execution")
	p.UpdatedAt = env.TimeUTC()
	if err := tx.Set(eventKey(key, env.ID), []byte(strconv.Itoa(p.Feedbacks))); err != nil {
		return err
	}
	return tx.SetJSON(policyKey(key), p)
}

// GetPolicy returns the policy whose events.EntityKey is key, or
// NewPolicy's initial one when no feedback reached it yet.
func GetPolicy(store *projections.Store, key string) (Policy, error) {
	scope, id, _ := events.SplitEntityKey(key)
	p := NewPolicy(scope, id)
	_, err := store.GetJSON(Name, policyKey(key), &p)
	return p, err
}
