package toolgraph

import (
	"fmt"
	"sort"
)

// EdgeType is the kind of relation an edge states (GraphRAG design).
type EdgeType string

// Edge types of the GraphRAG design. Learning from tool calls produces
// EdgeSequence only; the others exist in the design for edges declared by
// workflow templates or inferred by other processors.
const (
	// EdgeDependency: To needs the output of From (weight 1.0).
	EdgeDependency EdgeType = "dependency"
	// EdgeContains: From is a composite that contains To (weight 0.8).
	EdgeContains EdgeType = "contains"
	// EdgeSequence: To was called right after From (weight 0.5).
	EdgeSequence EdgeType = "sequence"
	// EdgeAlternative: To can replace From (weight 0.3).
	EdgeAlternative EdgeType = "alternative"
)

// EdgeSource is how an edge is known (GraphRAG design).
type EdgeSource string

// Edge sources of the GraphRAG design.
const (
	// SourceObserved: seen in executed workflows (weight 1.0).
	SourceObserved EdgeSource = "observed"
	// SourceInferred: derived by reasoning over other edges (weight 0.7).
	SourceInferred EdgeSource = "inferred"
	// SourceTemplate: declared by a workflow template (weight 0.5).
	SourceTemplate EdgeSource = "template"
)

// Thresholds on edge confidence (GraphRAG design): an edge at or above
// SuggestionThreshold may be suggested as a next step; at or above
// SpeculationThreshold its target may be executed speculatively.
const (
	SuggestionThreshold  = 0.7
	SpeculationThreshold = 0.85
)

// Learning constants.
const (
	// Smoothing is k in Confidence = count(A→B) / (count(A→·) + k). See
	// Confidence for why 1.
	Smoothing = 1.0
	// MinObservations is the number of observed transitions out of the
	// context tool below which Next falls back to the prior (GraphRAG
	// design: "fewer than 5 observations").
	MinObservations = 5
)

// TypeWeight is the weight of an edge type (GraphRAG design: dependency
// 1.0, contains 0.8, sequence 0.5, alternative 0.3); 0 for an unknown type.
func TypeWeight(t EdgeType) float64 {
	switch t {
	case EdgeDependency:
		return 1.0
	case EdgeContains:
		return 0.8
	case EdgeSequence:
		return 0.5
	case EdgeAlternative:
		return 0.3
	}
	return 0
}

// SourceWeight is the weight of an edge source (GraphRAG design: observed
// 1.0, inferred 0.7, template 0.5); 0 for an unknown source.
func SourceWeight(s EdgeSource) float64 {
	switch s {
	case SourceObserved:
		return 1.0
	case SourceInferred:
		return 0.7
	case SourceTemplate:
		return 0.5
	}
	return 0
}

// EdgeWeight is the weight graph algorithms use for an edge (GraphRAG
// design): TypeWeight(t) × SourceWeight(s) × confidence. For a learned
// edge it lies in [0, 0.5).
func EdgeWeight(t EdgeType, s EdgeSource, confidence float64) float64 {
	return TypeWeight(t) * SourceWeight(s) * confidence
}

// Confidence is the confidence of a sequence edge A→B observed count times
// among the sourceObservations transitions out of A: the smoothed
// transition probability count / (sourceObservations + Smoothing), in
// [0, 1); 0 when nothing was observed.
//
// Why this formula: it is the posterior mean of P(next = B | A) under an
// (improper) Beta(0, k) prior: k imaginary transitions that went elsewhere,
// none to B. It
// keeps the order of the maximum-likelihood estimate among A's successors
// (so ranking by it is ranking by bigram count) but shrinks edges of rarely
// seen tools towards 0, which is what the design's thresholds need: with
// k = 1 an edge taken every time reaches the suggestion threshold 0.7 after
// 3 observations (3/4) and the speculation threshold 0.85 after 6 (6/7),
// whereas the raw ratio would reach 1.0 after a single observation. In the
// leave-one-task-out evaluation k = 0.5, 1 and 2 give identical accuracy
// and k = 5 one hit less (see the package documentation), so k was chosen
// for the thresholds, not for accuracy.
func Confidence(count, sourceObservations int) float64 {
	if count <= 0 {
		return 0
	}
	return float64(count) / (float64(sourceObservations) + Smoothing)
}

// Rows of the projection (JSON; integers and strings only, so that every
// row is an exact, order-independent function of the observed events).

// nodeRow is n/<tool>: how often a tool was called.
type nodeRow struct {
	Tool string `json:"tool"`
	// Calls is the number of calls of the tool.
	Calls int `json:"calls"`
	// Starts is the number of workflows whose first call it was.
	Starts int `json:"starts"`
	// Out is count(tool→·): transitions out of the tool (self-loops included).
	Out int `json:"out"`
	// In is count(·→tool): transitions into the tool.
	In int `json:"in"`
	// FirstSeenMS and LastSeenMS bound the event times of its calls (Unix ms).
	FirstSeenMS int64 `json:"first_seen_ms"`
	LastSeenMS  int64 `json:"last_seen_ms"`
}

// edgeRow is e/<from>/<to>: a learned sequence edge.
type edgeRow struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"observed_count"`
	// Failed counts the observations whose call of To failed.
	Failed int `json:"failed_count,omitempty"`
	// FirstSeenMS and LastSeenMS bound the event times of the observations
	// (the time of the call of To), Unix ms.
	FirstSeenMS int64 `json:"first_seen_ms"`
	LastSeenMS  int64 `json:"last_seen_ms"`
}

// totalsRow is g/totals.
type totalsRow struct {
	// Calls is the number of tool calls observed.
	Calls int `json:"calls"`
	// Transitions is the number of edge updates (calls with a predecessor).
	Transitions int `json:"transitions"`
	// Workflows is the number of distinct workflows seen.
	Workflows int `json:"workflows"`
	// Tools and Edges count distinct nodes and edges.
	Tools int `json:"tools"`
	Edges int `json:"edges"`
}

// contextRow is x/<before>/<before failed>/<from>/<from failed>/<to>: how
// often To was called right after the two calls Before, From of the same
// workflow with those outcomes (Before "" = From was the workflow's first
// call). These second-order counts feed the context levels of Next; they
// are learned only from transitions that carry their context
// (TransitionData.Context).
type contextRow struct {
	Before       string `json:"before,omitempty"`
	BeforeFailed bool   `json:"before_failed,omitempty"`
	From         string `json:"from"`
	FromFailed   bool   `json:"from_failed,omitempty"`
	To           string `json:"to"`
	Count        int    `json:"observed_count"`
}

// ctxKey is the identity of a contextRow (its key without the scope).
type ctxKey struct {
	Before       string
	BeforeFailed bool
	From         string
	FromFailed   bool
	To           string
}

func (r contextRow) key() ctxKey {
	return ctxKey{r.Before, r.BeforeFailed, r.From, r.FromFailed, r.To}
}

// workflowRow is w/<key>/<workflow>: the learning state of one workflow.
type workflowRow struct {
	Key      string `json:"key"`
	Workflow string `json:"workflow"`
	// Last is the last tool called ("" before any).
	Last string `json:"last,omitempty"`
	// LastFailed: the call of Last failed.
	LastFailed bool `json:"last_failed,omitempty"`
	// Before is the tool called before Last ("" before two calls);
	// BeforeFailed: that call failed.
	Before       string `json:"before,omitempty"`
	BeforeFailed bool   `json:"before_failed,omitempty"`
	Calls        int    `json:"calls"`
}

// observation is one tool call in the context of its workflow.
type observation struct {
	From, To string // From "" = first call of the workflow
	AtMS     int64
	Failed   bool // the call of To failed
	// Ctx is the second-order context of a transition (From != ""); nil
	// when the transition does not carry it (events written before it
	// existed), in which case no contextRow is counted.
	Ctx *TransitionContext
	// Words are the words of the user's last message before the call
	// (TransitionData.Words); each counts a wordRow.
	Words []string
}

// advance records the call of tool at atMS in the workflow's state and
// returns the observation it makes.
func (w *workflowRow) advance(tool string, atMS int64, failed bool) observation {
	o := observation{From: w.Last, To: tool, AtMS: atMS, Failed: failed}
	if w.Last != "" {
		o.Ctx = &TransitionContext{FromFailed: w.LastFailed, Before: w.Before, BeforeFailed: w.BeforeFailed}
	}
	w.Before, w.BeforeFailed = w.Last, w.LastFailed
	w.Last, w.LastFailed = tool, failed
	w.Calls++
	return o
}

// counts is where learning writes: the projection (through a Tx) or an
// in-memory Graph. Getters return a zero row (ok false) when absent.
type counts interface {
	getNode(tool string) (nodeRow, bool, error)
	putNode(r nodeRow) error
	getEdge(from, to string) (edgeRow, bool, error)
	putEdge(r edgeRow) error
	getTotals() (totalsRow, error)
	putTotals(r totalsRow) error
	getContext(k ctxKey) (contextRow, bool, error)
	putContext(r contextRow) error
	// addWords adds 1 to the wordRow of every word of words after from
	// (words are distinct).
	addWords(from, to string, words []string) error
}

// learn applies one observation to c. It is the only learning code: the
// processor runs it against the projection, Learner against a Graph.
func learn(c counts, o observation) error {
	tot, err := c.getTotals()
	if err != nil {
		return err
	}
	to, ok, err := c.getNode(o.To)
	if err != nil {
		return err
	}
	if !ok {
		to = nodeRow{Tool: o.To, FirstSeenMS: o.AtMS, LastSeenMS: o.AtMS}
		tot.Tools++
	}
	to.Calls++
	to.FirstSeenMS, to.LastSeenMS = min(to.FirstSeenMS, o.AtMS), max(to.LastSeenMS, o.AtMS)
	tot.Calls++
	if o.From == "" {
		to.Starts++
		tot.Workflows++
		if err := c.putNode(to); err != nil {
			return err
		}
		if err := c.putTotals(tot); err != nil {
			return err
		}
		return learnWords(c, o)
	}
	to.In++
	if err := c.putNode(to); err != nil { // before reading From: From may be To
		return err
	}
	from, ok, err := c.getNode(o.From)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("toolgraph: workflow state names tool %q that has no node row", o.From)
	}
	from.Out++
	if err := c.putNode(from); err != nil {
		return err
	}
	e, ok, err := c.getEdge(o.From, o.To)
	if err != nil {
		return err
	}
	if !ok {
		e = edgeRow{From: o.From, To: o.To, FirstSeenMS: o.AtMS, LastSeenMS: o.AtMS}
		tot.Edges++
	}
	e.Count++
	if o.Failed {
		e.Failed++
	}
	e.FirstSeenMS, e.LastSeenMS = min(e.FirstSeenMS, o.AtMS), max(e.LastSeenMS, o.AtMS)
	if err := c.putEdge(e); err != nil {
		return err
	}
	tot.Transitions++
	if err := c.putTotals(tot); err != nil {
		return err
	}
	if err := learnWords(c, o); err != nil {
		return err
	}
	if o.Ctx == nil {
		return nil
	}
	k := ctxKey{o.Ctx.Before, o.Ctx.BeforeFailed, o.From, o.Ctx.FromFailed, o.To}
	x, ok, err := c.getContext(k)
	if err != nil {
		return err
	}
	if !ok {
		x = contextRow{Before: k.Before, BeforeFailed: k.BeforeFailed, From: k.From, FromFailed: k.FromFailed, To: k.To}
	}
	x.Count++
	return c.putContext(x)
}

// learnWords counts o's words after o.From (wordRow).
func learnWords(c counts, o observation) error {
	if len(o.Words) == 0 {
		return nil
	}
	return c.addWords(o.From, o.To, o.Words)
}

// Graph is the in-memory tool graph: call and transition counts, from which confidence, edge weights, PageRank,
// communities, next-step predictions and paths are computed. The processor
// and the queries build it from projection rows (Load), the evaluation from
// events (Learner); every algorithm is a pure function of its counts, and
// map order never reaches a result (nodes are numbered in sorted tool-name
// order). A Graph is not safe for concurrent mutation; once built, its
// read methods (Next, Tools, Path, Edges, Ranks) may be called
// concurrently.
type Graph struct {
	nodes  map[string]*nodeRow
	edges  map[[2]string]*edgeRow
	ctxs   map[ctxKey]*contextRow
	words  map[wordKey]*wordRow
	totals totalsRow

	an analysisCache
}

// NewGraph returns an empty Graph.
func NewGraph() *Graph {
	return &Graph{nodes: map[string]*nodeRow{}, edges: map[[2]string]*edgeRow{}, ctxs: map[ctxKey]*contextRow{}, words: map[wordKey]*wordRow{}}
}

func (g *Graph) getNode(tool string) (nodeRow, bool, error) {
	if r, ok := g.nodes[tool]; ok {
		return *r, true, nil
	}
	return nodeRow{}, false, nil
}

func (g *Graph) putNode(r nodeRow) error {
	g.an.invalidate()
	g.nodes[r.Tool] = &r
	return nil
}

func (g *Graph) getEdge(from, to string) (edgeRow, bool, error) {
	if r, ok := g.edges[[2]string{from, to}]; ok {
		return *r, true, nil
	}
	return edgeRow{}, false, nil
}

func (g *Graph) putEdge(r edgeRow) error {
	g.an.invalidate()
	g.edges[[2]string{r.From, r.To}] = &r
	return nil
}

// mergeNode adds r to the node of its tool: counts summed, seen-times
// widened. Loading several scopes' graphs so gives their union, whatever
// the order of the rows.
func (g *Graph) mergeNode(r nodeRow) {
	g.an.invalidate()
	n, ok := g.nodes[r.Tool]
	if !ok {
		g.nodes[r.Tool] = &r
		return
	}
	n.Calls += r.Calls
	n.Starts += r.Starts
	n.Out += r.Out
	n.In += r.In
	n.FirstSeenMS, n.LastSeenMS = min(n.FirstSeenMS, r.FirstSeenMS), max(n.LastSeenMS, r.LastSeenMS)
}

// mergeEdge adds r to the edge of its tools, as mergeNode.
func (g *Graph) mergeEdge(r edgeRow) {
	g.an.invalidate()
	e, ok := g.edges[[2]string{r.From, r.To}]
	if !ok {
		g.edges[[2]string{r.From, r.To}] = &r
		return
	}
	e.Count += r.Count
	e.Failed += r.Failed
	e.FirstSeenMS, e.LastSeenMS = min(e.FirstSeenMS, r.FirstSeenMS), max(e.LastSeenMS, r.LastSeenMS)
}

func (g *Graph) getContext(k ctxKey) (contextRow, bool, error) {
	if r, ok := g.ctxs[k]; ok {
		return *r, true, nil
	}
	return contextRow{}, false, nil
}

func (g *Graph) putContext(r contextRow) error {
	g.an.invalidate()
	g.ctxs[r.key()] = &r
	return nil
}

// mergeContext adds r to the context row of its key, as mergeNode.
func (g *Graph) mergeContext(r contextRow) {
	g.an.invalidate()
	if x, ok := g.ctxs[r.key()]; ok {
		x.Count += r.Count
		return
	}
	g.ctxs[r.key()] = &r
}

func (g *Graph) addWords(from, to string, words []string) error {
	for _, w := range words {
		g.mergeWord(wordRow{From: from, Word: w, To: to, Count: 1})
	}
	return nil
}

// mergeWord adds r to the word row of its key, as mergeNode.
func (g *Graph) mergeWord(r wordRow) {
	g.an.invalidate()
	if x, ok := g.words[r.key()]; ok {
		x.Count += r.Count
		return
	}
	g.words[r.key()] = &r
}

func (g *Graph) getTotals() (totalsRow, error) { return g.totals, nil }

func (g *Graph) putTotals(r totalsRow) error {
	g.totals = r
	return nil
}

// NumTools is the number of tools (nodes).
func (g *Graph) NumTools() int { return len(g.nodes) }

// NumEdges is the number of distinct sequence edges, self-loops included.
func (g *Graph) NumEdges() int { return len(g.edges) }

// Transitions is the number of observed transitions (edge updates).
func (g *Graph) Transitions() int { return g.totals.Transitions }

// Edge is a learned edge with its derived values.
type Edge struct {
	// From and To are tool ids.
	From string `json:"from"`
	To   string `json:"to"`
	// Type is EdgeSequence and Source SourceObserved for learned edges.
	Type   EdgeType   `json:"edge_type"`
	Source EdgeSource `json:"edge_source"`
	// Count is count(From→To).
	Count int `json:"observed_count"`
	// Failed is how many of them ended in a failed call of To.
	Failed int `json:"failed_count"`
	// SourceObservations is count(From→·).
	SourceObservations int `json:"source_observations"`
	// Confidence is Confidence(Count − Failed, SourceObservations): a
	// failed call counts against the edge.
	Confidence float64 `json:"confidence"`
	// Weight is EdgeWeight(Type, Source, Confidence).
	Weight float64 `json:"weight"`
	// FirstSeenMS and LastSeenMS bound the observations' event times (Unix ms).
	FirstSeenMS int64 `json:"first_seen_ms"`
	LastSeenMS  int64 `json:"last_seen_ms"`
}

func (g *Graph) edgeView(r *edgeRow) Edge {
	out := 0
	if n, ok := g.nodes[r.From]; ok {
		out = n.Out
	}
	c := Confidence(r.Count-r.Failed, out)
	return Edge{
		From: r.From, To: r.To, Type: EdgeSequence, Source: SourceObserved,
		Count: r.Count, Failed: r.Failed, SourceObservations: out, Confidence: c,
		Weight:      EdgeWeight(EdgeSequence, SourceObserved, c),
		FirstSeenMS: r.FirstSeenMS, LastSeenMS: r.LastSeenMS,
	}
}

// Edges returns every edge, sorted by (From, To).
func (g *Graph) Edges() []Edge {
	keys := make([][2]string, 0, len(g.edges))
	for k := range g.edges {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	out := make([]Edge, len(keys))
	for i, k := range keys {
		out[i] = g.edgeView(g.edges[k])
	}
	return out
}

// EdgeBetween returns the edge from→to and whether it was observed.
func (g *Graph) EdgeBetween(from, to string) (Edge, bool) {
	r, ok := g.edges[[2]string{from, to}]
	if !ok {
		return Edge{}, false
	}
	return g.edgeView(r), true
}
