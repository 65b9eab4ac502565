package distill

import (
	"math"
	"strings"
	"testing"
)

// --llm-rate NaN or +Inf is refused naming the flag, as 0 and -1 are:
// NaN passed the check (every comparison with it is false) and serve
// started with it (a new user's walkthrough, 2026-12-03).
func TestRateMustBeFinitePositive(t *testing.T) {
	for _, r := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		err := LLMConfig{URL: "http://127.0.0.1:9/v1", Model: "m", RatePerSecond: r}.Validate()
		if err == nil || !strings.Contains(err.Error(), "--llm-rate") {
			t.Errorf("rate %v: %v; want an error naming --llm-rate", r, err)
		}
	}
	if err := (LLMConfig{URL: "http://127.0.0.1:9/v1", Model: "m", RatePerSecond: 2.5}).Validate(); err != nil {
		t.Errorf("rate 2.5: %v", err)
	}
}
