package dag

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/chronicle-dev/chronicle/events/taubench"
)

// Report measures the builder's dependencies against the data flow
// observed in tau-bench sessions. An observed flow A → B is a call of B
// one of whose argument values appeared in the reply of an earlier call of
// A (A ≠ B) in the same session. Values compared: strings of at least 3
// characters and numbers of magnitude at least 10, as leaf values of the
// parsed JSON (a reply that is not JSON is one string); smaller values
// (counts, 0/1, two-letter codes) coincide by chance. Declared before
// measuring, not tuned.
//
// Split: the sessions of even task ids are the learn half (output schemas
// inferred from their replies, rule chosen by F1 there among Rules), odd task ids
// the report half (every figure below but LearnF1). All 4 trials of a task
// fall in the same half.
type Report struct {
	LearnSessions  int `json:"learn_sessions"`
	ReportSessions int `json:"report_sessions"`
	// Rule is the rule (name rule, echo handling) chosen on the learn half.
	Rule  string      `json:"rule"`
	Rules []RuleScore `json:"rules"`
	// Precision, Recall, F1 of the chosen rule over tool edges (A, B) on
	// the report half; CI95 are the 2.5th and 97.5th percentiles of 1,000
	// bootstrap resamples of the report sessions (seed 1).
	Precision     float64    `json:"precision"`
	Recall        float64    `json:"recall"`
	F1            float64    `json:"f1"`
	PrecisionCI95 [2]float64 `json:"precision_ci95"`
	RecallCI95    [2]float64 `json:"recall_ci95"`
	// Predicted, Observed, Both count tool edges.
	Predicted int `json:"predicted_edges"`
	Observed  int `json:"observed_edges"`
	Both      int `json:"true_positive_edges"`
	// Flows counts observed flow instances (a call B and an earlier tool A
	// whose reply held one of its argument values); FlowRecall is the
	// share of them whose edge A → B is predicted.
	Flows      int     `json:"flow_instances"`
	FlowRecall float64 `json:"flow_recall"`
	// Missed lists observed edges not predicted, Spurious predicted edges
	// never observed (report half), as "A → B".
	Missed   []string `json:"missed_edges"`
	Spurious []string `json:"spurious_edges"`
}

// RuleScore is one name rule's result: its F1 on the learn half (what the
// choice used) and precision/recall on the report half.
type RuleScore struct {
	Rule      string  `json:"rule"`
	LearnF1   float64 `json:"learn_f1"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	Edges     int     `json:"predicted_edges"`
}

// sessionFlows are the observed flow instances of one session, as
// "A\x00B" edge keys (one per call B and earlier tool A).
func sessionFlows(r taubench.Record) []string {
	type reply struct {
		tool   string
		values map[string]bool
	}
	var replies []reply
	var out []string
	for _, m := range r.Traj {
		for _, tc := range m.ToolCalls {
			args := leafValues([]byte(tc.Function.Arguments))
			from := map[string]bool{}
			for _, rp := range replies {
				if rp.tool == tc.Function.Name || from[rp.tool] {
					continue
				}
				for v := range args {
					if rp.values[v] {
						from[rp.tool] = true
						break
					}
				}
			}
			for a := range from {
				out = append(out, a+"\x00"+tc.Function.Name)
			}
		}
		if m.Role == "tool" && m.Name != "" {
			replies = append(replies, reply{tool: m.Name, values: leafValues([]byte(m.Text()))})
		}
	}
	sort.Strings(out)
	return out
}

// leafValues are the comparable leaf values of a JSON document (or of
// text that is not JSON), as canonical strings: "s:<string>", "n:<number>".
func leafValues(raw []byte) map[string]bool {
	out := map[string]bool{}
	v, ok := decode(bytes.TrimSpace(raw))
	if !ok {
		v = string(raw)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if len(x) >= 3 {
				out["s:"+x] = true
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && math.Abs(f) >= 10 {
				out["n:"+json.Number(formatNum(f)).String()] = true
			}
		case []any:
			for _, it := range x {
				walk(it)
			}
		case map[string]any:
			for _, it := range x {
				walk(it)
			}
		}
	}
	walk(v)
	return out
}

func formatNum(f float64) string {
	b, _ := json.Marshal(f) // 255.0 and 255 both give "255"
	return string(b)
}

func edgeSet(es []Edge) map[string]bool {
	out := map[string]bool{}
	for _, e := range es {
		out[e.From+"\x00"+e.To] = true
	}
	return out
}

func prf(pred, obs map[string]bool) (p, r, f float64, both int) {
	for k := range pred {
		if obs[k] {
			both++
		}
	}
	if len(pred) > 0 {
		p = float64(both) / float64(len(pred))
	}
	if len(obs) > 0 {
		r = float64(both) / float64(len(obs))
	}
	if p+r > 0 {
		f = 2 * p * r / (p + r)
	}
	return p, r, f, both
}

// Evaluate measures the builder on tau-bench records (the bundled 200
// sessions in chronicle eval) as Report describes.
func Evaluate(recs []taubench.Record) (Report, error) {
	tools, err := ParseOpenAITools(airlineTools)
	if err != nil {
		return Report{}, err
	}
	learn := func(_ int, r taubench.Record) bool { return r.TaskID%2 == 0 }
	catalog := WithLearnedOutputs(tools, Replies(recs, learn))
	var rep Report
	learnObs, testObs := map[string]bool{}, map[string]bool{}
	var testFlows [][]string
	for i, r := range recs {
		fl := sessionFlows(r)
		if learn(i, r) {
			rep.LearnSessions++
			for _, k := range fl {
				learnObs[k] = true
			}
			continue
		}
		rep.ReportSessions++
		testFlows = append(testFlows, fl)
		for _, k := range fl {
			testObs[k] = true
		}
	}
	best, bestF1 := Rules[0], -1.0
	preds := map[Rule]map[string]bool{}
	for _, rule := range Rules {
		pred := edgeSet(Dependencies(catalog, rule))
		preds[rule] = pred
		_, _, lf, _ := prf(pred, learnObs)
		p, r, _, _ := prf(pred, testObs)
		rep.Rules = append(rep.Rules, RuleScore{Rule: rule.String(), LearnF1: lf, Precision: p, Recall: r, Edges: len(pred)})
		if lf > bestF1 {
			best, bestF1 = rule, lf
		}
	}
	pred := preds[best]
	rep.Rule = best.String()
	rep.Precision, rep.Recall, rep.F1, rep.Both = prf(pred, testObs)
	rep.Predicted, rep.Observed = len(pred), len(testObs)
	for _, fl := range testFlows {
		for _, k := range fl {
			rep.Flows++
			if pred[k] {
				rep.FlowRecall++
			}
		}
	}
	if rep.Flows > 0 {
		rep.FlowRecall /= float64(rep.Flows)
	}
	name := func(k string) string {
		a, b, _ := bytes.Cut([]byte(k), []byte{0})
		return string(a) + " → " + string(b)
	}
	for k := range testObs {
		if !pred[k] {
			rep.Missed = append(rep.Missed, name(k))
		}
	}
	for k := range pred {
		if !testObs[k] {
			rep.Spurious = append(rep.Spurious, name(k))
		}
	}
	sort.Strings(rep.Missed)
	sort.Strings(rep.Spurious)
	// bootstrap over the report sessions
	rng := rand.New(rand.NewPCG(1, 0))
	const n = 1000
	ps, rs := make([]float64, n), make([]float64, n)
	for i := range n {
		obs := map[string]bool{}
		for range testFlows {
			for _, k := range testFlows[rng.IntN(len(testFlows))] {
				obs[k] = true
			}
		}
		ps[i], rs[i], _, _ = prf(pred, obs)
	}
	sort.Float64s(ps)
	sort.Float64s(rs)
	rep.PrecisionCI95 = [2]float64{ps[n*25/1000], ps[n*975/1000]}
	rep.RecallCI95 = [2]float64{rs[n*25/1000], rs[n*975/1000]}
	return rep, nil
}
