package toolgraph

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the name of the tool graph processor (Processor) and its
// projection: the per-scope aggregate, read by every query.
const Name = "toolgraph"

// TransitionsName is the name of the keyed transitions processor
// (Transitions) and its projection: the last two tools of every workflow.
const TransitionsName = "toolgraph.transitions"

// DefaultRecomputeEvery is the default Processor.RecomputeEvery.
const DefaultRecomputeEvery = 50

// EmitFunc queues a derived event during Apply; (*projections.Tx).Emit has
// this shape.
type EmitFunc func(tx *projections.Tx, typ events.Type, payload any) error

// TransitionData is the data of tool.transition.observed.v1: one tool call
// of a workflow and the tool called before it in the same workflow. The
// Transitions processor emits it on chronicle.toolgraph, keyed by the
// scope's graph (EntityKey(scope, Graph)), whatever partition of
// chronicle.sessions the call came from.
type TransitionData struct {
	// Graph is GraphID; with the event's scope, the record key.
	Graph string `json:"graph"`
	// WorkflowID is the workflow of the call.
	WorkflowID string `json:"workflow_id"`
	// Entity is the record key of the causing event on chronicle.sessions
	// (scope/session id, else scope/workflow id).
	Entity string `json:"entity,omitempty"`
	// From is the tool called before in the same workflow; "" (absent) for
	// the workflow's first call.
	From string `json:"from,omitempty"`
	// To is the tool called.
	To string `json:"to"`
	// Failed: the call of To failed (success false).
	Failed bool `json:"failed,omitempty"`
	// Call is the 1-based number of the call in its workflow.
	Call int `json:"call"`
	// Context is what came before From in the workflow, for the
	// second-order counts of Next; absent for a first call, and in events
	// written before the field existed (those count first-order only).
	Context *TransitionContext `json:"context,omitempty"`
	// Words are the Words of the last coordination.minute.recorded.v1 of
	// UserActor on the call's record key (its session) before the call,
	// at most MaxWords; absent when there was none, or it had no words,
	// and in events written before the field existed. The graph counts
	// each after From (wordRow) for NextAfterMessage.
	Words []string `json:"words,omitempty"`
}

// TransitionContext is the second-order context of a transition From→To:
// the outcome of the call of From and the call before it.
type TransitionContext struct {
	// FromFailed: the call of From failed (success false).
	FromFailed bool `json:"from_failed,omitempty"`
	// Before is the tool called right before From in the same workflow;
	// "" (absent) when From was the workflow's first call.
	Before string `json:"before,omitempty"`
	// BeforeFailed: the call of Before failed.
	BeforeFailed bool `json:"before_failed,omitempty"`
}

// Transitions is the keyed half of the tool graph: it reads
// workflow.task.completed.v1 on chronicle.sessions, keeps each workflow's
// last two tools and their outcomes (w/<key>/<workflow>, a row of the
// event's own record key), keeps the words of each key's last user
// message (u/<key>, from coordination.minute.recorded.v1 of UserActor) and
// emits tool.transition.observed.v1 (TransitionData) for every call,
// keyed by the scope's tool graph. Its state is per key, so the partitions
// of chronicle.sessions are applied concurrently and owned by any
// instance; the aggregate over every session of a scope is Processor's,
// fed in the order chronicle.toolgraph fixes. The derived event's id is
// events.DerivedIDIn of the call's event, so a replay or a restoring owner
// re-emits identical events and Processor drops the repeats by their
// idempotency key.
type Transitions struct{}

// Name implements processors.Processor.
func (Transitions) Name() string { return TransitionsName }

// Topics implements processors.Processor: chronicle.sessions, where
// workflow.task.completed.v1 lives.
func (Transitions) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }

// Types implements processors.TypedProcessor: Apply acts on tool calls
// and minutes only, so the engine skips the other events of
// chronicle.sessions without an Apply call or an idempotency key.
func (Transitions) Types() []events.Type {
	return []events.Type{events.WorkflowTaskCompleted, events.MinuteRecorded}
}

// ActsOn implements processors.FilteredProcessor: of the minutes, Apply
// acts on the user's only (actor UserActor); the engine skips the others
// (the agents' and the tools' minutes, most of a session) as it skips
// other types. One decode of the minute's actor.
func (Transitions) ActsOn(env *events.Envelope) bool {
	return env.Type != events.MinuteRecorded || isUserMinute(env)
}

// StatePerKey implements processors.KeyedState: every row is one record
// key's (the workflow's session, or the workflow).
func (Transitions) StatePerKey() bool { return true }

// Apply implements processors.Processor: for a workflow.task.completed.v1
// it advances the workflow's w/ row and emits tool.transition.observed.v1
// with the words of the key's u/ row; for a minute of UserActor it
// replaces the key's u/ row with the Words of the minute's text (an empty
// message clears them). Other events are ignored. Errors: an undecodable
// event (missing tool or workflow id, bad time), a store error, a failed
// Emit.
func (Transitions) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type == events.MinuteRecorded {
		ws, user, err := userWords(env)
		if err != nil || !user {
			return err
		}
		key, err := events.Key(env)
		if err != nil {
			return err
		}
		return tx.SetJSON(userKey(key), userRow{Words: ws})
	}
	if env.Type != events.WorkflowTaskCompleted {
		return nil
	}
	c, err := parseCall(env)
	if err != nil {
		return err
	}
	var u userRow
	if _, err := tx.GetJSON(userKey(c.Key), &u); err != nil {
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
	return tx.Emit(events.ToolTransitionObserved, TransitionData{
		Graph: GraphID, WorkflowID: c.Workflow, Entity: c.Key, From: o.From, To: o.To, Failed: o.Failed, Call: w.Calls, Context: o.Ctx, Words: u.Words,
	})
}

// Processor learns the tool graph of each scope from
// tool.transition.observed.v1 on chronicle.toolgraph (GraphRAG design) and
// emits graph.edge.learned.v1 and graph.ranks.updated.v1. Its topic is
// keyed by the scope's graph, so its rows (n/, e/, t/ of one scope) are
// the state of one record key, and every scope's graph is a function of
// one ordered partition: the same on every instance and in a replay, on
// any number of partitions. It is meant to run as a global table
// (processors.GlobalTable): every instance applies every partition, so
// each can answer next-tool for any scope. The zero value is ready to use.
type Processor struct {
	// RecomputeEvery: PageRank and communities of a scope are recomputed,
	// and graph.ranks.updated.v1 emitted, by the event that brings the
	// scope's number of transitions (edge updates) to a multiple of it. 0
	// means DefaultRecomputeEvery; a negative value disables recomputes.
	RecomputeEvery int
	// Emit queues derived events; nil means (*projections.Tx).Emit.
	Emit EmitFunc
}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor: chronicle.toolgraph.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicToolgraph} }

// StatePerKey implements processors.KeyedState: the rows of one scope's
// graph are the state of its record key, EntityKey(scope, GraphID).
func (Processor) StatePerKey() bool { return true }

// GlobalTable implements processors.GlobalTable: every instance keeps the
// whole tool graph (every scope, every partition of chronicle.toolgraph).
func (Processor) GlobalTable() bool { return true }

// Row keys. Tool, key and workflow ids and scopes are path-escaped so that
// '/' in an id cannot make two keys collide.
func esc(s string) string               { return url.PathEscape(s) }
func nodeKey(scope, tool string) string { return "n/" + esc(scope) + "/" + esc(tool) }
func nodePrefix(scope string) string    { return "n/" + esc(scope) + "/" }
func edgeKey(scope, from, to string) string {
	return "e/" + esc(scope) + "/" + esc(from) + "/" + esc(to)
}
func edgePrefix(scope, from string) string { return "e/" + esc(scope) + "/" + esc(from) + "/" }
func scopeEdgePrefix(scope string) string  { return "e/" + esc(scope) + "/" }
func totalsKey(scope string) string        { return "t/" + esc(scope) }
func contextPrefix(scope string) string    { return "x/" + esc(scope) + "/" }
func contextKey(scope string, k ctxKey) string {
	return contextPrefix(scope) + esc(k.Before) + "/" + flag(k.BeforeFailed) + "/" + esc(k.From) + "/" + flag(k.FromFailed) + "/" + esc(k.To)
}
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
func workflowKey(key, wf string) string { return "w/" + esc(key) + "/" + esc(wf) }
func userKey(key string) string         { return "u/" + esc(key) }
func wordPrefix(scope string) string    { return "v/" + esc(scope) + "/" }

// txCounts is one scope's graph in the projection, through an Apply
// call's Tx, as learning's counts.
type txCounts struct {
	tx    *projections.Tx
	scope string
}

func (c txCounts) getNode(tool string) (nodeRow, bool, error) {
	var r nodeRow
	ok, err := c.tx.GetJSON(nodeKey(c.scope, tool), &r)
	return r, ok, err
}
func (c txCounts) putNode(r nodeRow) error { return c.tx.SetJSON(nodeKey(c.scope, r.Tool), r) }
func (c txCounts) getEdge(from, to string) (edgeRow, bool, error) {
	var r edgeRow
	ok, err := c.tx.GetJSON(edgeKey(c.scope, from, to), &r)
	return r, ok, err
}
func (c txCounts) putEdge(r edgeRow) error { return c.tx.SetJSON(edgeKey(c.scope, r.From, r.To), r) }
func (c txCounts) getTotals() (totalsRow, error) {
	var r totalsRow
	_, err := c.tx.GetJSON(totalsKey(c.scope), &r)
	return r, err
}
func (c txCounts) putTotals(r totalsRow) error { return c.tx.SetJSON(totalsKey(c.scope), r) }
func (c txCounts) getContext(k ctxKey) (contextRow, bool, error) {
	var r contextRow
	ok, err := c.tx.GetJSON(contextKey(c.scope, k), &r)
	return r, ok, err
}
func (c txCounts) putContext(r contextRow) error {
	return c.tx.SetJSON(contextKey(c.scope, r.key()), r)
}

// addWords reads and writes one v/ row per word. A word row's value is
// its count in decimal, not JSON: its key holds the rest, and a
// transition reads and writes one per word of the user's message (about
// a dozen), most of this processor's work in a replay.
func (c txCounts) addWords(from, to string, words []string) error {
	pre := wordPrefix(c.scope) + esc(from) + "/"
	suf := "/" + esc(to)
	for _, w := range words {
		key := pre + esc(w) + suf
		n := 0
		val, ok, err := c.tx.Get(key)
		if err != nil {
			return err
		}
		if ok {
			if n, err = strconv.Atoi(string(val)); err != nil {
				return fmt.Errorf("toolgraph: word row %q: count: %w", key, err)
			}
		}
		if err := c.tx.Put(key, strconv.AppendInt(nil, int64(n+1), 10)); err != nil {
			return err
		}
	}
	return nil
}

// parseWordRow reads a v/<scope>/<from>/<word>/<to> row back.
func parseWordRow(key string, val []byte) (wordRow, error) {
	parts := strings.Split(key, "/")
	if len(parts) != 5 || parts[0] != "v" {
		return wordRow{}, fmt.Errorf("toolgraph: word row key %q: want v/<scope>/<from>/<word>/<to>", key)
	}
	var r wordRow
	var err error
	for i, dst := range []*string{&r.From, &r.Word, &r.To} {
		if *dst, err = url.PathUnescape(parts[2+i]); err != nil {
			return wordRow{}, fmt.Errorf("toolgraph: word row key %q: %w", key, err)
		}
	}
	if r.Count, err = strconv.Atoi(string(val)); err != nil {
		return wordRow{}, fmt.Errorf("toolgraph: word row %q: count: %w", key, err)
	}
	return r, nil
}

// Apply implements processors.Processor. For a tool.transition.observed.v1
// of scope S it counts the call and the transition from the previous tool
// in S's graph (n/S/, e/S/, t/S rows; x/S/ when it carries its context), emits graph.edge.learned.v1 for the
// edge's first observation and for every edge out of the previous tool
// whose confidence crossed SuggestionThreshold or SpeculationThreshold
// (either way: the other successors' confidence drops), and, when S's
// number of transitions reaches a multiple of RecomputeEvery, recomputes
// PageRank and communities over S's graph and emits
// graph.ranks.updated.v1. Both derived events carry S as scope. Other
// event types are ignored. Errors: an undecodable event (the field named),
// a store error, or a failed Emit.
func (p Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.ToolTransitionObserved {
		return nil
	}
	var d TransitionData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if d.To == "" {
		return fmt.Errorf("toolgraph: %s %s: /data/to: required", env.Type, env.ID)
	}
	at, err := env.EventTime()
	if err != nil {
		return err
	}
	o := observation{From: d.From, To: d.To, AtMS: at.UnixMilli(), Failed: d.Failed}
	if d.From != "" {
		o.Ctx = d.Context
	}
	if len(d.Words) > MaxWords { // a producer's own transition; the schema bounds it too
		return fmt.Errorf("toolgraph: %s %s: /data/words: %d words, at most %d", env.Type, env.ID, len(d.Words), MaxWords)
	}
	o.Words = distinct(d.Words)
	scope := env.EffectiveScope()
	cs := txCounts{tx, scope}
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
	learned, err := edgeChanges(cs, o)
	if err != nil {
		return err
	}
	for _, el := range learned {
		if err := emit(tx, EdgeLearned, el); err != nil {
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
	g, err := loadGraph(tx.Scan, []string{scope}, false) // the ranks do not read the context rows
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
//
// Only the observed edge's confidence can rise; every other edge's falls
// from succ/newOut to succ/(newOut+1) (Smoothing 1) and crosses a
// threshold t downward only if succ/newOut ≥ t. The other edges' successes
// are at most their observations, newOut − count(From→To), so when even
// that many successes stay below the lowest threshold no other edge can
// cross and the edges out of From are not scanned: the observed edge's
// row alone gives the answer (the same list, TestEdgeChangesSkipsNoCrossing).
// On the bundled tau-bench sessions that skips the scan for most
// transitions, which was half of this processor's CPU in a replay.
func edgeChanges(cs txCounts, o observation) ([]EdgeLearnedData, error) {
	from, _, err := cs.getNode(o.From)
	if err != nil {
		return nil, err
	}
	e, ok, err := cs.getEdge(o.From, o.To)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("toolgraph: edge %s→%s has no row after its observation", o.From, o.To)
	}
	if Confidence(from.Out-e.Count, from.Out-1) >= min(SuggestionThreshold, SpeculationThreshold) {
		return scanEdgeChanges(cs, o, from.Out)
	}
	return edgeCrossings(e, o, from.Out), nil
}

// scanEdgeChanges is edgeChanges over every edge out of o.From, in row-key
// order; newOut is count(From→·) after o.
func scanEdgeChanges(cs txCounts, o observation, newOut int) ([]EdgeLearnedData, error) {
	var out []EdgeLearnedData
	err := cs.tx.Scan(edgePrefix(cs.scope, o.From), func(_ string, val []byte) (bool, error) {
		var e edgeRow
		if err := gojson.Unmarshal(val, &e); err != nil {
			return false, err
		}
		if e.From != o.From {
			return false, fmt.Errorf("toolgraph: edge row %s→%s under the prefix of %q", e.From, e.To, o.From)
		}
		out = append(out, edgeCrossings(e, o, newOut)...)
		return true, nil
	})
	return out, err
}

// edgeCrossings is the graph.edge.learned.v1 data of edge row e (as it is
// after observation o) when count(e.From→·) went from newOut−1 to newOut.
func edgeCrossings(e edgeRow, o observation, newOut int) []EdgeLearnedData {
	oldCount, newSucc := e.Count, e.Count-e.Failed
	oldSucc := newSucc
	if e.To == o.To {
		oldCount--
		if !o.Failed {
			oldSucc--
		}
	}
	return crossings(e.From, e.To, oldCount, e.Count, oldSucc, newSucc, newOut-1, newOut)
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

// loadGraph builds a Graph from the projection rows of scopes (nil: every
// scope): the union of their graphs, counts summed (Graph.merge). Without
// contexts it leaves out the context rows, which only next-tool
// prediction reads (a graph's ranks, communities and paths do not,
// TestRanksIgnoreContexts): a scope holds one per (tool before, tool,
// next tool) seen, 229 against 81 edges on the tau-bench sessions.
func loadGraph(scan scanFunc, scopes []string, contexts bool) (*Graph, error) {
	g := NewGraph()
	prefixes := [5][]string{{"n/"}, {"e/"}, {"t/"}, {"x/"}, {"v/"}}
	if scopes != nil {
		prefixes = [5][]string{}
		for _, sc := range scopes {
			prefixes[0] = append(prefixes[0], nodePrefix(sc))
			prefixes[1] = append(prefixes[1], scopeEdgePrefix(sc))
			prefixes[2] = append(prefixes[2], totalsKey(sc))
			prefixes[3] = append(prefixes[3], contextPrefix(sc))
			prefixes[4] = append(prefixes[4], wordPrefix(sc))
		}
	}
	if !contexts {
		prefixes[3], prefixes[4] = nil, nil
	}
	for _, pre := range prefixes[4] {
		if err := scan(pre, func(key string, val []byte) (bool, error) {
			r, err := parseWordRow(key, val)
			if err != nil {
				return false, err
			}
			g.mergeWord(r)
			return true, nil
		}); err != nil {
			return nil, err
		}
	}
	for _, pre := range prefixes[3] {
		if err := scan(pre, func(_ string, val []byte) (bool, error) {
			var r contextRow
			if err := gojson.Unmarshal(val, &r); err != nil {
				return false, err
			}
			g.mergeContext(r)
			return true, nil
		}); err != nil {
			return nil, err
		}
	}
	for _, pre := range prefixes[0] {
		if err := scan(pre, func(_ string, val []byte) (bool, error) {
			var r nodeRow
			if err := gojson.Unmarshal(val, &r); err != nil {
				return false, err
			}
			g.mergeNode(r)
			return true, nil
		}); err != nil {
			return nil, err
		}
	}
	for _, pre := range prefixes[1] {
		if err := scan(pre, func(_ string, val []byte) (bool, error) {
			var r edgeRow
			if err := gojson.Unmarshal(val, &r); err != nil {
				return false, err
			}
			g.mergeEdge(r)
			return true, nil
		}); err != nil {
			return nil, err
		}
	}
	for _, pre := range prefixes[2] {
		exact := scopes != nil
		if err := scan(pre, func(key string, val []byte) (bool, error) {
			if exact && key != pre {
				return true, nil // t/project:a is a prefix of t/project:ab
			}
			var r totalsRow
			if err := gojson.Unmarshal(val, &r); err != nil {
				return false, err
			}
			g.totals.Calls += r.Calls
			g.totals.Transitions += r.Transitions
			g.totals.Workflows += r.Workflows
			return true, nil
		}); err != nil {
			return nil, err
		}
	}
	g.totals.Tools, g.totals.Edges = len(g.nodes), len(g.edges)
	return g, nil
}
