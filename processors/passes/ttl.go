package passes

import (
	"math"

	"github.com/chronicle-dev/chronicle/events"
)

// TTL is phase A's allocation for a pass, in executed steps: a pure,
// deterministic function of the TaskProfile (same profile → same TTL), as
// the multi-pass reasoning design asks. Chronicle's mapping:
//
//	TTL = max(1, ceil(2 · reasoning_depth · tools · breadth · confidence · sufficiency))
//
// with tools none 0.5, light 0.75, moderate 1, heavy 1.5; breadth narrow
// 0.75, moderate 1, broad 1.5; confidence low 0.75, medium 1, high 1.25;
// sufficiency = 1.5 − information_sufficiency (scarce information → more
// steps). Every factor is 1 at the design's default profile, which gets
// 2 · 3 = 6 steps. Unknown enum values count as the default's.
func TTL(p events.TaskProfile) int {
	f := 2 * float64(max(p.ReasoningDepth, 1))
	f *= factor(p.ExpectedToolUsage, map[string]float64{"none": 0.5, "light": 0.75, "moderate": 1, "heavy": 1.5})
	f *= factor(p.OutputBreadth, map[string]float64{"narrow": 0.75, "moderate": 1, "broad": 1.5})
	f *= factor(p.ConfidenceRequirement, map[string]float64{"low": 0.75, "medium": 1, "high": 1.25})
	s := min(max(p.InformationSufficiency, 0), 1)
	f *= 1.5 - s
	// round away float noise before ceil (0.75·2·… can land at n+1e-15)
	return max(1, int(math.Ceil(math.Round(f*1e9)/1e9)))
}

func factor(v string, m map[string]float64) float64 {
	if f, ok := m[v]; ok {
		return f
	}
	return 1
}
