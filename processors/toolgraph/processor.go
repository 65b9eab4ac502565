package toolgraph

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "toolgraph"

// DefaultRecomputeEvery is the default Processor.RecomputeEvery.
const DefaultRecomputeEvery = 50

// EmitFunc queues a derived event during Apply; (*projections.Tx).Emit has
// this shape.
type EmitFunc func(tx *projections.Tx, typ events.Type, payload any) error

// Processor learns the tool graph from workflow.task.completed.v1 events
// (GraphRAG design) and emits graph.edge.learned.v1 and
// graph.ranks.updated.v1. The zero value is ready to use.
type Processor struct {
	// RecomputeEvery: PageRank and communities are recomputed, and
	// graph.ranks.updated.v1 emitted, by the event that brings the total
	// number of transitions (edge updates) to a multiple of it. 0 means
	// DefaultRecomputeEvery; a negative value disables recomputes.
	RecomputeEvery int
	// Emit queues derived events; nil means (*projections.Tx).Emit, which
	// validates them and therefore fails while events/types.go does not
	// register EdgeLearned and RanksUpdated.
	Emit EmitFunc
}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// NeedsTotalOrder implements processors.TotalOrder: false. The projection
// is the same for every interleaving of the partitions of
// chronicle.sessions (see the package documentation), so replay and audit
// hold with any partition count. The derived events are not: with more
// than one partition, which event first observes an edge or crosses a
// threshold, and the counts in the events, depend on the interleaving —
// the price README's "Why one partition by default" describes for derived
// chains.
func (Processor) NeedsTotalOrder() bool { return false }

// Topics implements processors.Processor: chronicle.sessions, where
// workflow.task.completed.v1 lives.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }

// Row keys. Tool, key and workflow ids are path-escaped so that '/' in an
// id cannot make two keys collide.
func esc(s string) string               { return url.PathEscape(s) }
func nodeKey(tool string) string        { return "n/" + esc(tool) }
func edgeKey(from, to string) string    { return "e/" + esc(from) + "/" + esc(to) }
func edgePrefix(from string) string     { return "e/" + esc(from) + "/" }
func workflowKey(key, wf string) string { return "w/" + esc(key) + "/" + esc(wf) }

const totalsKey = "g/totals"

// txCounts is the projection, through an Apply call's Tx, as learning's
// counts.
type txCounts struct{ tx *projections.Tx }

func (c txCounts) getNode(tool string) (nodeRow, bool, error) {
	var r nodeRow
	ok, err := c.tx.GetJSON(nodeKey(tool), &r)
	return r, ok, err
}
func (c txCounts) putNode(r nodeRow) error { return c.tx.SetJSON(nodeKey(r.Tool), r) }
func (c txCounts) getEdge(from, to string) (edgeRow, bool, error) {
	var r edgeRow
	ok, err := c.tx.GetJSON(edgeKey(from, to), &r)
	return r, ok, err
}
func (c txCounts) putEdge(r edgeRow) error { return c.tx.SetJSON(edgeKey(r.From, r.To), r) }
func (c txCounts) getTotals() (totalsRow, error) {
	var r totalsRow
	_, err := c.tx.GetJSON(totalsKey, &r)
	return r, err
}
func (c txCounts) putTotals(r totalsRow) error { return c.tx.SetJSON(totalsKey, r) }

// Apply implements processors.Processor. For a workflow.task.completed.v1
// event it advances the workflow's state (w/<key>/<workflow>: the last
// tool), counts the call and the transition from the workflow's previous
// tool (n/, e/, g/totals rows), emits graph.edge.learned.v1 for the
// edge's first observation and for every edge out of the previous tool
// whose confidence crossed SuggestionThreshold or SpeculationThreshold
// (either way: the other successors' confidence drops), and, when the
// total number of transitions reaches a multiple of RecomputeEvery,
// recomputes PageRank and communities over the whole graph and emits
// graph.ranks.updated.v1. Other event types are ignored. Errors: an
// undecodable event, a store error, or a failed Emit.
func (p Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.WorkflowTaskCompleted {
		return nil
	}
	c, err := parseCall(env)
	if err != nil {
		return err
	}
	wk := workflowKey(c.Key, c.Workflow)
	w := workflowRow{Key: c.Key, Workflow: c.Workflow}
	if _, err := tx.GetJSON(wk, &w); err != nil {
		return err
	}
	o := w.advance(c.Tool, c.AtMS, c.Failed)
	if err := tx.SetJSON(wk, w); err != nil {
		return err
	}
	cs := txCounts{tx}
	if err := learn(cs, o); err != nil {
		return err
	}
	if o.From == "" {
		return nil
	}
	emit := p.Emit
	if emit == nil {
		emit = (*projections.Tx).Emit
	}
	learned, err := edgeChanges(cs, tx, o)
	if err != nil {
		return err
	}
	for _, d := range learned {
		if err := emit(tx, EdgeLearned, d); err != nil {
			return err
		}
	}
	every := p.RecomputeEvery
	if every == 0 {
		every = DefaultRecomputeEvery
	}
	tot, err := cs.getTotals()
	if err != nil || every < 0 || tot.Transitions%every != 0 {
		return err
	}
	g, err := loadGraph(tx.Scan)
	if err != nil {
		return err
	}
	return emit(tx, RanksUpdated, ranksData(g))
}

// edgeChanges lists the graph.edge.learned.v1 events of observation o,
// already applied to the rows: the observed edge's first observation, and
// threshold crossings of every edge out of o.From, whose confidences all
// changed because count(From→·) grew by one. Edges come in row-key order,
// each with first_observed, then upward crossings (0.7, 0.85), then
// downward ones (0.85, 0.7).
func edgeChanges(cs txCounts, tx *projections.Tx, o observation) ([]EdgeLearnedData, error) {
	from, _, err := cs.getNode(o.From)
	if err != nil {
		return nil, err
	}
	newOut := from.Out
	var out []EdgeLearnedData
	err = tx.Scan(edgePrefix(o.From), func(_ string, val []byte) (bool, error) {
		var e edgeRow
		if err := json.Unmarshal(val, &e); err != nil {
			return false, err
		}
		if e.From != o.From {
			return false, fmt.Errorf("toolgraph: edge row %s→%s under the prefix of %q", e.From, e.To, o.From)
		}
		oldCount, newSucc := e.Count, e.Count-e.Failed
		oldSucc := newSucc
		if e.To == o.To {
			oldCount--
			if !o.Failed {
				oldSucc--
			}
		}
		out = append(out, crossings(e.From, e.To, oldCount, e.Count, oldSucc, newSucc, newOut-1, newOut)...)
		return true, nil
	})
	return out, err
}

// crossings lists the graph.edge.learned.v1 data of edge from→to when its
// count goes from oldCount to newCount (its successful observations from
// oldSucc to newSucc) and count(from→·) from oldOut to newOut.
func crossings(from, to string, oldCount, newCount, oldSucc, newSucc, oldOut, newOut int) []EdgeLearnedData {
	oldConf, newConf := Confidence(oldSucc, oldOut), Confidence(newSucc, newOut)
	mk := func(reason string, threshold float64) EdgeLearnedData {
		return EdgeLearnedData{
			From: from, To: to, EdgeType: EdgeSequence, EdgeSource: SourceObserved,
			ObservedCount: newCount, SourceObservations: newOut,
			Confidence: newConf, Weight: EdgeWeight(EdgeSequence, SourceObserved, newConf),
			Reason: reason, Threshold: threshold,
		}
	}
	var out []EdgeLearnedData
	if oldCount == 0 && newCount > 0 {
		out = append(out, mk(ReasonFirstObserved, 0))
	}
	up := []struct {
		t      float64
		reason string
	}{{SuggestionThreshold, ReasonAboveSuggestion}, {SpeculationThreshold, ReasonAboveSpeculation}}
	for _, u := range up {
		if oldConf < u.t && newConf >= u.t {
			out = append(out, mk(u.reason, u.t))
		}
	}
	down := []struct {
		t      float64
		reason string
	}{{SpeculationThreshold, ReasonBelowSpeculation}, {SuggestionThreshold, ReasonBelowSuggestion}}
	for _, d := range down {
		if oldConf >= d.t && newConf < d.t {
			out = append(out, mk(d.reason, d.t))
		}
	}
	return out
}

// ranksData is the graph.ranks.updated.v1 payload of g.
func ranksData(g *Graph) RanksUpdatedData {
	tools := g.Tools()
	d := RanksUpdatedData{
		Graph: GraphID, Transitions: g.Transitions(), Tools: g.NumTools(), Edges: g.NumEdges(),
		Communities: g.Communities(), Ranks: make([]ToolRank, 0, min(len(tools), MaxRanksInEvent)),
	}
	for _, t := range tools[:min(len(tools), MaxRanksInEvent)] {
		d.Ranks = append(d.Ranks, ToolRank{Tool: t.Tool, PageRank: t.PageRank, Community: t.Community, InDegree: t.InDegree, OutDegree: t.OutDegree})
	}
	return d
}

// scanFunc is the Scan of a Tx, or of a Store bound to this projection.
type scanFunc func(prefix string, fn func(key string, val []byte) (bool, error)) error

// loadGraph builds a Graph from the projection rows.
func loadGraph(scan scanFunc) (*Graph, error) {
	g := NewGraph()
	if err := scan("n/", func(_ string, val []byte) (bool, error) {
		var r nodeRow
		if err := json.Unmarshal(val, &r); err != nil {
			return false, err
		}
		return true, g.putNode(r)
	}); err != nil {
		return nil, err
	}
	if err := scan("e/", func(_ string, val []byte) (bool, error) {
		var r edgeRow
		if err := json.Unmarshal(val, &r); err != nil {
			return false, err
		}
		return true, g.putEdge(r)
	}); err != nil {
		return nil, err
	}
	err := scan(totalsKey, func(_ string, val []byte) (bool, error) {
		return false, json.Unmarshal(val, &g.totals)
	})
	return g, err
}
