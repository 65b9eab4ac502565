// Package suggest proposes a workflow DAG for an intent (PML design,
// "Speculation modes"): tools chosen by a hybrid of meaning and the
// learned tool graph, ordered by the DAG builder, with the DAG's
// confidence, the execution mode it allows, the safety reasons that held
// it back and an explanation (the graph edges behind each tool and their
// PageRank).
package suggest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Modes (PML design): by the DAG's confidence.
const (
	// ModeExplicitRequired: confidence < 0.70; the agent must choose.
	ModeExplicitRequired = "explicit_required"
	// ModeSuggestion: 0.70 ≤ confidence ≤ the speculation threshold.
	ModeSuggestion = "suggestion"
	// ModeSpeculative: confidence above the speculation threshold and no
	// safety reason: the executor may run the DAG before being asked.
	ModeSpeculative = "speculative_execution"
)

// Thresholds of the design: suggestion from 0.70; speculation above 0.85
// at the least, starting conservative at 0.92 (the adaptive threshold's
// initial value).
const (
	SuggestionThreshold         = 0.70
	SpeculationFloor            = 0.85
	InitialSpeculationThreshold = 0.92
)

// Dangerous are name parts of operations never speculated on (PML design:
// delete, deploy, payment, send_email — and anything that writes; the
// tau-bench tools that change the airline database are taubench.MutatingTools).
var Dangerous = []string{"delete", "deploy", "payment", "send_email", "send", "book", "cancel", "update", "transfer", "create", "remove", "write"}

// Writes reports whether tool may change state: a tau-bench mutating tool
// or a name containing a Dangerous part. Unknown tools are judged by name.
func Writes(tool string) bool {
	if taubench.IsMutating(tool) {
		return true
	}
	for _, d := range Dangerous {
		if strings.Contains(tool, d) {
			return true
		}
	}
	return false
}

// Request is a suggestion request.
type Request struct {
	Intent       string   `json:"intent"`
	ContextTools []string `json:"context_tools"`
	// K is the number of tools to suggest (default 3, at most 10).
	K int `json:"k"`
	// Policy names the adaptive threshold that applies (default
	// "default"; see workflows.Policy).
	Policy string `json:"policy,omitempty"`
	// SpeculationThreshold is the policy's current threshold (default
	// InitialSpeculationThreshold), set by the caller from the projection.
	SpeculationThreshold float64 `json:"-"`
	// Estimates are optional per-tool estimates of a call's cost and
	// duration, by tool name. When given, speculation is refused (with the
	// reason) when the DAG's estimated cost reaches MaxSpeculationCostUSD or
	// its estimated time MaxSpeculationSeconds, or when a pick has no
	// estimate; without them the limits are not checked (the recorded
	// sessions have no costs or durations).
	Estimates map[string]Estimate `json:"estimates,omitempty"`
}

// Speculation limits (PML design: never speculate above a cost or time
// limit, < $0.10 and < 5 s estimated).
const (
	MaxSpeculationCostUSD = 0.10
	MaxSpeculationSeconds = 5.0
)

// Estimate is a tool call's (or, in a Suggestion, the DAG's) estimated
// cost in US dollars and duration in seconds.
type Estimate struct {
	CostUSD float64 `json:"cost_usd"`
	Seconds float64 `json:"seconds"`
}

// Pick is one suggested tool and why.
type Pick struct {
	Tool string `json:"tool"`
	// Score = Alpha·Semantic + (1 − Alpha)·Graph, the hybrid ranking score.
	Score    float64 `json:"score"`
	Semantic float64 `json:"semantic"`
	Graph    float64 `json:"graph"`
	Alpha    float64 `json:"alpha"`
	// Confidence is the confidence of the learned edge From → Tool (0
	// when no edge with MinObservations supports it).
	Confidence float64 `json:"confidence"`
	From       string  `json:"from,omitempty"`
	PageRank   float64 `json:"pagerank"`
	Writes     bool    `json:"writes"`
}

// Suggestion is the answer.
type Suggestion struct {
	Tools      []Pick   `json:"tools"`
	DAG        dag.DAG  `json:"dag"`
	Confidence float64  `json:"confidence"`
	Mode       string   `json:"mode"`
	Threshold  float64  `json:"speculation_threshold"`
	Safety     []string `json:"safety_reasons"`
	// Estimate is the DAG's estimate when the request gave estimates:
	// the cost is the sum over the picks; the time is the critical path,
	// the sum over the layers of the layer's longest pick (a layer's tools
	// run in parallel).
	Estimate *Estimate `json:"estimate,omitempty"`
	// Explanation lists, per tool, the direct edge that supports it and
	// its transitive path from the first context tool (toolgraph.Path).
	Explanation []string `json:"explanation"`
}

// Suggester holds what a suggestion reads: the learned graph, the tool
// catalogue (schemas and descriptions) and an embedder for the intent.
type Suggester struct {
	Graph    *toolgraph.Graph
	Catalog  []dag.Tool
	Embedder embedder.Embedder
	// Alpha, when set, replaces the local Alpha (1: meaning only, 0: the
	// graph only), for measuring the hybrid against its parts.
	Alpha *float64
	// vecs caches the description vectors of the tools and of intents
	// ("\x00" + intent).
	vecs map[string][]float32
}

// ErrInvalid is wrapped by errors of a bad request (a *FieldError, naming
// the field).
var ErrInvalid = errors.New("invalid suggestion request")

// FieldError is an ErrInvalid naming the request member it refuses by its
// path: Path holds member names (string) and array indexes (int), e.g.
// {"estimates", "lookup", "cost_usd"} or, for a replan_dag command's
// args, {"args", "tools", 0}. Error reads "<Field>: <Reason>", without
// ErrInvalid's text: the HTTP routes answer it as the route's own error
// with its Pointer (a suggestion request's text in a replan_dag command's
// error misled a walkthrough).
type FieldError struct {
	Path   []any
	Reason string
}

// Field is the path as the API's messages write it: args.tools[0].
func (e *FieldError) Field() string {
	var b strings.Builder
	for _, p := range e.Path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// Pointer is the path as a JSON pointer (RFC 6901) into the request body:
// /args/tools/0.
func (e *FieldError) Pointer() string {
	var b strings.Builder
	for _, p := range e.Path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(fmt.Sprint(p)))
	}
	return b.String()
}

func (e *FieldError) Error() string { return e.Field() + ": " + e.Reason }

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Under is e with prefix before its path (Replan's {"args"}).
func (e *FieldError) Under(prefix ...any) *FieldError {
	return &FieldError{Path: append(slices.Clone(prefix), e.Path...), Reason: e.Reason}
}

// KReason is the reason a k out of 1..10 is refused.
func KReason(k int) string {
	return fmt.Sprintf("%d is not from 1 to 10 (leave it out for the default 3)", k)
}

func fieldErr(reason string, path ...any) error { return &FieldError{Path: path, Reason: reason} }

// Alpha is the local weight of meaning against the graph (PML design,
// hybrid search): 1.0 without a context tool or when it has fewer than
// toolgraph.MinObservations outgoing observations (cold start: the
// Bayesian prior is meaning alone); otherwise 1 − 0.5·density, density =
// the context tool's distinct successors / (tools − 1), so ≈ 0.5 in a
// dense cluster and ≈ 1.0 for an isolated node.
func Alpha(g *toolgraph.Graph, ctx string) float64 {
	if ctx == "" || g.NumTools() < 2 {
		return 1
	}
	pred := g.Next([]string{ctx}, g.NumTools())
	if pred.Basis != toolgraph.BasisGraph {
		return 1
	}
	succ := 0
	for _, s := range pred.Suggestions {
		if s.Count > 0 && s.Tool != ctx {
			succ++
		}
	}
	density := float64(succ) / float64(g.NumTools()-1)
	return 1 - 0.5*min(1, density)
}

// Suggest proposes up to K tools for the intent, picked greedily: at each
// step every tool not yet picked (nor in the context) is scored with
// Alpha·semantic + (1 − Alpha)·graph, where semantic is the cosine of the
// intent and the tool's name and description (USE lite) and graph is
// toolgraph's next-step score after the context and the tools picked so
// far (0 under a prior basis); the best is picked and becomes the context.
// The DAG builder orders the picks (a cycle: the picks in order, one per
// layer, and a safety reason). The DAG's confidence is the smallest edge
// confidence among the picks (a pick no learned edge supports has 0), so
// the mode says how well the graph backs every step. Speculation is
// refused, with the reason, when a pick writes, and, when the request
// gives Estimates, when a pick has none or the DAG's estimate reaches a
// limit (MaxSpeculationCostUSD, MaxSpeculationSeconds).
func (s *Suggester) Suggest(ctx context.Context, req Request) (Suggestion, error) {
	if strings.TrimSpace(req.Intent) == "" && len(req.ContextTools) == 0 {
		return Suggestion{}, fieldErr("required (or context_tools)", "intent")
	}
	k := req.K
	if k == 0 {
		k = 3
	}
	if k < 1 || k > 10 {
		return Suggestion{}, fieldErr(KReason(k), "k")
	}
	for tool, e := range req.Estimates {
		if !(e.CostUSD >= 0) || math.IsInf(e.CostUSD, 0) {
			return Suggestion{}, fieldErr(fmt.Sprintf("%v is not a cost ≥ 0", e.CostUSD), "estimates", tool, "cost_usd")
		}
		if !(e.Seconds >= 0) || math.IsInf(e.Seconds, 0) {
			return Suggestion{}, fieldErr(fmt.Sprintf("%v is not a duration ≥ 0", e.Seconds), "estimates", tool, "seconds")
		}
	}
	th := req.SpeculationThreshold
	if th == 0 {
		th = InitialSpeculationThreshold
	}
	sem, err := s.semantic(ctx, req.Intent)
	if err != nil {
		return Suggestion{}, err
	}
	ranks := map[string]float64{}
	maxRank := 0.0
	for _, t := range s.Graph.Tools() {
		ranks[t.Tool] = t.PageRank
		maxRank = max(maxRank, t.PageRank)
	}
	chain := slices.Clone(req.ContextTools)
	var picks []Pick
	for len(picks) < k {
		last := ""
		if len(chain) > 0 {
			last = chain[len(chain)-1]
		}
		alpha := Alpha(s.Graph, last)
		if s.Alpha != nil {
			alpha = *s.Alpha
		}
		graph := map[string]toolgraph.Suggestion{}
		pred := s.Graph.Next(chain, s.Graph.NumTools())
		for _, sg := range pred.Suggestions {
			graph[sg.Tool] = sg
		}
		best := Pick{Score: math.Inf(-1)}
		for _, tool := range s.candidates() {
			if slices.Contains(chain, tool) {
				continue
			}
			p := Pick{Tool: tool, Semantic: sem[tool], Alpha: alpha, Writes: Writes(tool)}
			if sg, ok := graph[tool]; ok && pred.Basis == toolgraph.BasisGraph {
				p.Graph = min(1, sg.Score)
				if sg.Tier == toolgraph.TierObserved {
					p.Confidence, p.From = sg.Confidence, last
				}
			}
			if maxRank > 0 {
				p.PageRank = ranks[tool] / maxRank
			}
			p.Score = alpha*p.Semantic + (1-alpha)*p.Graph
			if p.Score > best.Score {
				best = p
			}
		}
		if best.Tool == "" {
			break
		}
		picks = append(picks, best)
		chain = append(chain, best.Tool)
	}
	out := Suggestion{Tools: picks, Threshold: th, Safety: []string{}, Explanation: []string{}}
	names := make([]string, len(picks))
	out.Confidence = 1
	for i, p := range picks {
		names[i] = p.Tool
		out.Confidence = min(out.Confidence, p.Confidence)
		switch {
		case p.From != "":
			e, _ := s.Graph.EdgeBetween(p.From, p.Tool)
			line := fmt.Sprintf("%s: direct edge %s → %s (observed %d times, confidence %.3f), PageRank %.3f of the highest", p.Tool, p.From, p.Tool, e.Count, p.Confidence, p.PageRank)
			if len(req.ContextTools) > 0 && req.ContextTools[0] != p.From {
				if r, err := s.Graph.Path(req.ContextTools[0], p.Tool); err == nil {
					line += fmt.Sprintf("; transitive path %s", strings.Join(r.Tools, " → "))
				}
			}
			out.Explanation = append(out.Explanation, line)
		default:
			out.Explanation = append(out.Explanation, fmt.Sprintf("%s: no learned edge with enough observations supports it (semantic %.3f), PageRank %.3f of the highest", p.Tool, p.Semantic, p.PageRank))
		}
		if p.Writes {
			out.Safety = append(out.Safety, fmt.Sprintf("%s writes: never executed speculatively", p.Tool))
		}
	}
	if len(picks) == 0 {
		out.Confidence = 0
	}
	d, err := dag.Build(s.withUnknown(names), names, dag.DefaultRule)
	var ce *dag.CycleError
	switch {
	case errors.As(err, &ce):
		out.Safety = append(out.Safety, "the tools' dependencies form a cycle ("+strings.Join(ce.Cycle, " → ")+"): run one per layer, in the order suggested")
		d = dag.DAG{Tools: names, Edges: []dag.Edge{}}
		for _, n := range names {
			d.Layers = append(d.Layers, []string{n})
		}
	case err != nil:
		return Suggestion{}, err
	}
	out.DAG = d
	if len(req.Estimates) > 0 && len(picks) > 0 {
		out.Estimate, out.Safety = estimate(d, req.Estimates, out.Safety)
	}
	switch {
	case out.Confidence < SuggestionThreshold:
		out.Mode = ModeExplicitRequired
	case out.Confidence <= th:
		out.Mode = ModeSuggestion
	case len(out.Safety) > 0:
		out.Mode = ModeSuggestion
	default:
		out.Mode = ModeSpeculative
	}
	return out, nil
}

// Unknown returns the index of the first of tools that is no tool of the
// catalogue or of the tool graph (none a suggestion can name), or -1.
func (s *Suggester) Unknown(tools []string) int {
	if len(tools) == 0 {
		return -1
	}
	known := s.candidates()
	for i, t := range tools {
		if _, ok := slices.BinarySearch(known, t); !ok {
			return i
		}
	}
	return -1
}

// candidates are the catalogue's tools and the graph's, sorted.
func (s *Suggester) candidates() []string {
	set := map[string]bool{}
	for _, t := range s.Catalog {
		set[t.Name] = true
	}
	for _, t := range s.Graph.Tools() {
		set[t.Tool] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// withUnknown is the catalogue plus schema-less tools for graph tools it
// lacks (they depend on nothing and feed nothing).
func (s *Suggester) withUnknown(names []string) []dag.Tool {
	out := slices.Clone(s.Catalog)
	for _, n := range names {
		if !slices.ContainsFunc(out, func(t dag.Tool) bool { return t.Name == n }) {
			out = append(out, dag.Tool{Name: n})
		}
	}
	return out
}

// semantic is the cosine of the intent with each candidate's name and
// description, clipped at 0 (both vectors are L2-normalised).
func (s *Suggester) semantic(ctx context.Context, intent string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(intent) == "" || s.Embedder == nil {
		return out, nil
	}
	cands := s.candidates()
	if s.vecs == nil {
		s.vecs = map[string][]float32{}
	}
	var missing, texts []string
	for _, key := range append(slices.Clone(cands), "\x00"+intent) {
		if _, ok := s.vecs[key]; !ok {
			missing = append(missing, key)
			if t, isIntent := strings.CutPrefix(key, "\x00"); isIntent {
				texts = append(texts, t)
			} else {
				texts = append(texts, s.describe(key))
			}
		}
	}
	if len(texts) > 0 {
		vecs, err := s.Embedder.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("suggest: embed: %w", err)
		}
		for i, key := range missing {
			s.vecs[key] = vecs[i]
		}
	}
	q := s.vecs["\x00"+intent]
	for _, c := range cands {
		var dot float64
		for i, x := range s.vecs[c] {
			dot += float64(x) * float64(q[i])
		}
		out[c] = max(0, dot)
	}
	return out, nil
}

func (s *Suggester) describe(tool string) string {
	text := strings.ReplaceAll(tool, "_", " ")
	for _, t := range s.Catalog {
		if t.Name == tool && t.Description != "" {
			text += ": " + t.Description
		}
	}
	return text
}

// estimate sums the picks' estimated costs and the layers' longest
// estimated durations, and appends a safety reason for a pick without an
// estimate or a total at or above a speculation limit.
func estimate(d dag.DAG, est map[string]Estimate, safety []string) (*Estimate, []string) {
	var total Estimate
	for _, layer := range d.Layers {
		longest := 0.0
		for _, tool := range layer {
			e, ok := est[tool]
			if !ok {
				safety = append(safety, fmt.Sprintf("%s has no cost or time estimate: the speculation limits cannot be checked", tool))
				continue
			}
			total.CostUSD += e.CostUSD
			longest = max(longest, e.Seconds)
		}
		total.Seconds += longest
	}
	if total.CostUSD >= MaxSpeculationCostUSD {
		safety = append(safety, fmt.Sprintf("estimated cost $%.4f is not below the $%.2f speculation limit", total.CostUSD, MaxSpeculationCostUSD))
	}
	if total.Seconds >= MaxSpeculationSeconds {
		safety = append(safety, fmt.Sprintf("estimated time %.3f s is not below the %.0f s speculation limit", total.Seconds, MaxSpeculationSeconds))
	}
	return &total, safety
}
