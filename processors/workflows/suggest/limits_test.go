package suggest

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
)

// Speculation is refused, with the reason, when the DAG's estimated cost
// reaches $0.10 or its estimated time 5 s, or a pick has no estimate;
// picks of one layer run in parallel, so the time is the critical path.
func TestSpeculationLimits(t *testing.T) {
	cat := []dag.Tool{{Name: "lookup"}, {Name: "details"}, {Name: "summary"}}
	// lookup → details → summary 20 times: both edges at confidence 0.952
	s := &Suggester{Graph: graphOf(t, repeat([]string{"lookup", "details", "summary"}, 20)...), Catalog: cat}
	run := func(k int, est map[string]Estimate) Suggestion {
		t.Helper()
		res, err := s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: k, Estimates: est})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(1, nil); res.Mode != ModeSpeculative || res.Estimate != nil {
		t.Fatalf("without estimates the limits are not checked: %s %+v", res.Mode, res.Estimate)
	}
	if res := run(1, map[string]Estimate{"details": {CostUSD: 0.01, Seconds: 1}}); res.Mode != ModeSpeculative || *res.Estimate != (Estimate{CostUSD: 0.01, Seconds: 1}) || len(res.Safety) != 0 {
		t.Fatalf("under the limits: %s %+v %v", res.Mode, res.Estimate, res.Safety)
	}
	for _, c := range []struct {
		est    map[string]Estimate
		reason string
	}{
		{map[string]Estimate{"details": {CostUSD: 0.10, Seconds: 1}}, "$0.1000 is not below the $0.10"},
		{map[string]Estimate{"details": {CostUSD: 0.01, Seconds: 5}}, "5.000 s is not below the 5 s"},
		{map[string]Estimate{"summary": {CostUSD: 0.01, Seconds: 1}}, "details has no cost or time estimate"},
	} {
		if res := run(1, c.est); res.Mode != ModeSuggestion || len(res.Safety) != 1 || !strings.Contains(res.Safety[0], c.reason) {
			t.Fatalf("%v: %s %v", c.est, res.Mode, res.Safety)
		}
	}
	// two picks in one layer (no schema links them): 3 s each is 3 s in
	// all, $0.04 each is $0.08; $0.07 for one makes $0.11
	two := map[string]Estimate{"details": {CostUSD: 0.04, Seconds: 3}, "summary": {CostUSD: 0.04, Seconds: 3}}
	if res := run(2, two); res.Mode != ModeSpeculative || len(res.DAG.Layers) != 1 || math.Abs(res.Estimate.CostUSD-0.08) > 1e-12 || res.Estimate.Seconds != 3 {
		t.Fatalf("two parallel picks: %s %v %+v %v", res.Mode, res.DAG.Layers, res.Estimate, res.Safety)
	}
	two["summary"] = Estimate{CostUSD: 0.07, Seconds: 3}
	if res := run(2, two); res.Mode != ModeSuggestion || !strings.Contains(strings.Join(res.Safety, ";"), "$0.1100") {
		t.Fatalf("two picks over the cost limit: %s %v", res.Mode, res.Safety)
	}
	// layers add up: 3 s ∥ 2 s, then 2.5 s = 5.5 s
	e, safety := estimate(dag.DAG{Layers: [][]string{{"a", "b"}, {"c"}}}, map[string]Estimate{"a": {Seconds: 3}, "b": {Seconds: 2}, "c": {Seconds: 2.5}}, nil)
	if e.Seconds != 5.5 || len(safety) != 1 || !strings.Contains(safety[0], "5.500 s") {
		t.Fatalf("critical path: %+v %v", e, safety)
	}
	if _, err := s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, Estimates: map[string]Estimate{"details": {CostUSD: -1}}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "estimates.details.cost_usd") {
		t.Fatalf("a negative cost: %v", err)
	}
	if _, err := s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, Estimates: map[string]Estimate{"details": {Seconds: math.NaN()}}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "estimates.details.seconds") {
		t.Fatalf("a NaN duration: %v", err)
	}
}
