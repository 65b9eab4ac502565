// Package treesearch is the processor that projects Chronicle's tree
// searches — quota-aware Beam-A* (Flujo's TreeSearchStep) — from the
// search.* events of topic chronicle.searches, and the runner that drives a
// search by writing those events and reading its state back from the
// projection only.
//
// The projection of one search is its durable frontier: the open set
// ordered by f = g + h (ties broken by generation order: a stable priority
// queue, as Tree of Thoughts' stable sort), the closed set
// of state digests, the beam kept after every expansion, the quota
// (reserved, used, refunded, overrun, outstanding; integers, so the
// arithmetic is exact), the best path and the status. A replay of the
// search's events rebuilds it bit for bit.
//
// Projection rows (under p/treesearch/), <key> being the search's
// events.EntityKey (scope "/" search id):
//
//	s/<key>                  Search (JSON): config, status, open set, quota, counts
//	n/<key>\x00<node id>     Node (JSON)
//	c/<key>\x00<digest>      closed set: the node that first reached the state
//	i/<search id>\x00<scope> index from a bare id to the scopes that hold it
//	p/<key>, b/<key>\x00<id> panels of parallel branches and their reductions (consensus.go)
//
// The closed set holds the digest of every state the search has generated
// (root included), so a candidate reaching a known state is killed as a
// duplicate before any evaluator call.
package treesearch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "treesearch"

// RootID is the node id of every search's root.
const RootID = "r"

// Search statuses.
const (
	StatusRunning   = "running"
	StatusPaused    = "paused"
	StatusCompleted = "completed"
)

// Node statuses.
const (
	NodeOpen      = "open"      // in the open set
	NodeExpanding = "expanding" // reserved for expansion, children being written
	NodeExpanded  = "expanded"  // expanded; its children are nodes of their own
	NodePruned    = "pruned"    // killed at generation: duplicate, prefilter or hard check
	NodeDropped   = "dropped"   // fell out of the beam
	NodeRejected  = "rejected"  // a human rejected it at a pause
	NodeGoal      = "goal"      // the goal the search completed with
)

// OpenEntry is one node of the open set.
type OpenEntry struct {
	ID         string  `json:"id"`
	F          float64 `json:"f"`
	Seq        int     `json:"seq"` // generation order: the root 0, then 1, 2, … as nodes are generated
	Depth      int     `json:"depth"`
	Goal       bool    `json:"goal,omitempty"`
	NeedsHuman bool    `json:"needs_human,omitempty"`
}

// Expansion is the expansion in flight: reserved, not yet decided.
type Expansion struct {
	N        int      `json:"n"`
	NodeID   string   `json:"node_id"`
	Reserved int64    `json:"reserved"`
	Children []string `json:"children"`
}

// Quota is the token account of a search. Invariant after every event:
// Reserved = Used − Overrun + Refunded + Outstanding.
type Quota struct {
	Limit       int64 `json:"limit"` // 0: no limit
	Reserved    int64 `json:"reserved"`
	Used        int64 `json:"used"`
	Refunded    int64 `json:"refunded"`
	Overrun     int64 `json:"overrun"`
	Outstanding int64 `json:"outstanding"`
	// Refused is the reservation the quota refused when the search ended
	// quota_exhausted (search.completed.v1 refused_tokens; 0: none named).
	Refused int64 `json:"refused,omitempty"`
}

// Counts are a search's running totals.
type Counts struct {
	Nodes          int `json:"nodes"`           // generated, root excluded
	EvaluatorCalls int `json:"evaluator_calls"` // nodes that carry a score
	Duplicates     int `json:"duplicates"`      // dedup hits: killed without an evaluator call
	Prefiltered    int `json:"prefiltered"`
	HardFailed     int `json:"hard_failed"`
	BeamDropped    int `json:"beam_dropped"`
	Unexpandable   int `json:"unexpandable"`
}

// Decision is a human's decision at a pause.
type Decision struct {
	NodeID   string `json:"node_id"`
	Question string `json:"question"`
	Decision string `json:"decision"`
	Note     string `json:"note,omitempty"`
	By       string `json:"by,omitempty"`
	Time     string `json:"time"`
	// Seq is the search's Seq once the resume that recorded the decision
	// was applied: while the search's Seq still equals it, nothing has
	// happened since (the ResumeWorker drives only then).
	Seq int `json:"seq"`
}

// Search is the projected state of one search.
type Search struct {
	ID          string                 `json:"id"`
	Scope       string                 `json:"scope"`
	Goal        string                 `json:"goal"`
	RootState   string                 `json:"root_state"`
	Config      events.SearchConfig    `json:"config"`
	Proposer    events.SearchComponent `json:"proposer"`
	Evaluator   events.SearchComponent `json:"evaluator"`
	Model       string                 `json:"model,omitempty"`
	Status      string                 `json:"status"`
	Outcome     string                 `json:"outcome,omitempty"`
	GoalNode    string                 `json:"goal_node,omitempty"`
	Path        []string               `json:"path,omitempty"`
	Answer      string                 `json:"answer,omitempty"`
	StartedAt   string                 `json:"started_at"`
	CompletedAt string                 `json:"completed_at,omitempty"`
	// Open is the open set (after the last decision: the beam), ordered by
	// F, then generation order (Seq).
	Open       []OpenEntry `json:"open"`
	Current    *Expansion  `json:"current,omitempty"`
	Expansions int         `json:"expansions"`
	Quota      Quota       `json:"quota"`
	Counts     Counts      `json:"counts"`
	PausedAt   string      `json:"paused_at,omitempty"` // node id while paused
	Question   string      `json:"question,omitempty"`
	Decisions  []Decision  `json:"decisions,omitempty"`
	// Locks are the solver locks (lock_sha256) frozen from this search.
	Locks []string `json:"locks,omitempty"`
	// Seq counts the events applied to the search: a writer that knows how
	// many it published waits for Seq to reach it.
	Seq int `json:"seq"`
}

// Key is the search's events.EntityKey.
func (s Search) Key() string { return events.EntityKey(s.Scope, s.ID) }

// Node is one node of a search tree.
type Node struct {
	ID           string   `json:"id"`
	Seq          int      `json:"seq"` // generation order
	Parent       string   `json:"parent,omitempty"`
	Depth        int      `json:"depth"`
	Expansion    int      `json:"expansion,omitempty"` // the expansion that generated it
	State        string   `json:"state"`
	Digest       string   `json:"digest"`
	Candidate    string   `json:"candidate,omitempty"`
	G            float64  `json:"g"`
	H            *float64 `json:"h"` // nil: ∞ (pruned)
	F            *float64 `json:"f"`
	Score        *float64 `json:"score,omitempty"`
	Goal         bool     `json:"goal,omitempty"`
	HardFail     bool     `json:"hard_fail,omitempty"`
	NeedsHuman   bool     `json:"needs_human,omitempty"`
	Status       string   `json:"status"`
	PrunedReason string   `json:"pruned_reason,omitempty"`
	DuplicateOf  string   `json:"duplicate_of,omitempty"`
	Report       string   `json:"report,omitempty"`
	TokensUsed   int64    `json:"tokens_used,omitempty"`
	Time         string   `json:"time"`
}

func searchRow(key string) string         { return "s/" + key }
func nodeRow(key, node string) string     { return "n/" + key + "\x00" + node }
func nodePrefix(key string) string        { return "n/" + key + "\x00" }
func closedRow(key, digest string) string { return "c/" + key + "\x00" + digest }
func closedPrefix(key string) string      { return "c/" + key + "\x00" }

var idIndexRow = projections.IDIndexKey

func rejectf(field, format string, a ...any) error {
	return &events.ValidationError{Index: -1, Pointer: field, Reason: fmt.Sprintf(format, a...)}
}

// Digest is the state digest of a search node: the lowercase hex SHA-256
// of its canonical state.
func Digest(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

// Processor is the tree-search processor.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicSearches} }

// StatePerKey implements processors.KeyedState: every row is one search's
// (its record key), so partitions of chronicle.searches run concurrently.
func (Processor) StatePerKey() bool { return true }

// Apply implements processors.Processor. It validates every event against
// the search's state (a rejection names the field) and updates the search,
// its nodes and its closed set.
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	if env.Type == events.SearchBranchCompleted || env.Type == events.SearchConsensusReduced || env.Type == events.SearchCandidateCorrected {
		return applyPanel(tx, env, key)
	}
	var s Search
	ok, err := tx.GetJSON(searchRow(key), &s)
	if err != nil {
		return err
	}
	if env.Type == events.SearchStarted {
		if ok {
			return rejectf("/data/search_id", "search %s already started", key)
		}
		return start(tx, env, key)
	}
	if !ok {
		return rejectf("/data/search_id", "search %s was never started (no search.started.v1)", key)
	}
	if env.Type == events.SolverLocked {
		if err := lockApply(env, &s); err != nil {
			return err
		}
		s.Seq++
		return tx.SetJSON(searchRow(key), s)
	}
	if s.Status == StatusCompleted {
		return rejectf("/type", "search %s is completed; %s comes after its end", key, env.Type)
	}
	switch env.Type {
	case events.SearchQuotaReserved:
		err = reserve(tx, env, &s)
	case events.SearchNodeExpanded:
		err = node(tx, env, &s)
	case events.SearchFrontierDecided:
		err = decide(tx, env, &s)
	case events.SearchPaused:
		err = pause(env, &s)
	case events.SearchResumed:
		err = resume(tx, env, &s)
	case events.SearchCompleted:
		err = complete(tx, env, &s)
	default:
		return rejectf("/type", "%s is not a tree-search event", env.Type)
	}
	if err != nil {
		return err
	}
	s.Seq++
	return tx.SetJSON(searchRow(key), s)
}

func start(tx *projections.Tx, env *events.Envelope, key string) error {
	var d events.SearchStartedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	scope, id, _ := events.SplitEntityKey(key)
	s := Search{
		ID: id, Scope: scope, Goal: d.Goal, RootState: d.RootState, Config: d.Config,
		Proposer: d.Proposer, Evaluator: d.Evaluator, Model: d.Model,
		Status: StatusRunning, StartedAt: env.TimeUTC(), Quota: Quota{Limit: d.Config.QuotaTokens}, Seq: 1,
	}
	h := 1.0
	f := h
	root := Node{ID: RootID, State: d.RootState, Digest: Digest(d.RootState), H: &h, F: &f, Status: NodeOpen, Time: env.TimeUTC()}
	s.Open = []OpenEntry{{ID: RootID, F: f}}
	if err := tx.SetJSON(nodeRow(key, RootID), root); err != nil {
		return err
	}
	if err := tx.Set(closedRow(key, root.Digest), []byte(RootID)); err != nil {
		return err
	}
	if err := tx.Set(idIndexRow(id, scope), nil); err != nil {
		return err
	}
	return tx.SetJSON(searchRow(key), s)
}

func getNode(tx *projections.Tx, key, id string) (Node, bool, error) {
	var n Node
	ok, err := tx.GetJSON(nodeRow(key, id), &n)
	return n, ok, err
}

func reserve(tx *projections.Tx, env *events.Envelope, s *Search) error {
	var d events.SearchQuotaReservedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	switch {
	case s.Status != StatusRunning:
		return rejectf("/type", "search is %s: no expansion may start", s.Status)
	case s.Current != nil:
		return rejectf("/data/expansion", "expansion %d is still in flight", s.Current.N)
	case d.Expansion != s.Expansions+1:
		return rejectf("/data/expansion", "%d: the next expansion is %d", d.Expansion, s.Expansions+1)
	case len(s.Open) == 0:
		return rejectf("/data/node_id", "the open set is empty")
	case d.NodeID != s.Open[0].ID:
		return rejectf("/data/node_id", "%q is not the head of the open set (%q)", d.NodeID, s.Open[0].ID)
	case s.Open[0].Goal:
		return rejectf("/data/node_id", "%q is a goal: the search completes instead", d.NodeID)
	case s.Open[0].NeedsHuman:
		return rejectf("/data/node_id", "%q waits for a human decision", d.NodeID)
	case s.Config.MaxExpansions > 0 && d.Expansion > s.Config.MaxExpansions:
		return rejectf("/data/expansion", "%d exceeds max_expansions %d", d.Expansion, s.Config.MaxExpansions)
	}
	// Compared without adding, so no count can wrap around past the limit
	// (Used can exceed Limit after an overrun: the difference is then
	// negative and every reservation breaches).
	if q := s.Quota; q.Limit > 0 && d.Tokens > q.Limit-q.Used-q.Outstanding {
		return rejectf("/data/tokens", "reserving %d tokens would breach the quota: used %d + outstanding %d + %d > %d", d.Tokens, q.Used, q.Outstanding, d.Tokens, q.Limit)
	}
	if d.Tokens > math.MaxInt64-s.Quota.Reserved {
		return rejectf("/data/tokens", "%d: the search's reserved count (%d) would pass the largest 64-bit integer", d.Tokens, s.Quota.Reserved)
	}
	key := s.Key()
	n, ok, err := getNode(tx, key, d.NodeID)
	if err != nil || !ok {
		return fmt.Errorf("treesearch: node %s of the open set has no row (%v)", d.NodeID, err)
	}
	n.Status = NodeExpanding
	s.Current = &Expansion{N: d.Expansion, NodeID: d.NodeID, Reserved: d.Tokens, Children: []string{}}
	s.Quota.Reserved += d.Tokens
	s.Quota.Outstanding += d.Tokens
	return tx.SetJSON(nodeRow(key, n.ID), n)
}

func node(tx *projections.Tx, env *events.Envelope, s *Search) error {
	var d events.SearchNodeData
	if err := env.Decode(&d); err != nil {
		return err
	}
	key := s.Key()
	c := s.Current
	switch {
	case c == nil:
		return rejectf("/data/node_id", "no expansion in flight: reserve quota first (search.quota.reserved.v1)")
	case d.Expansion != c.N:
		return rejectf("/data/expansion", "%d: the expansion in flight is %d", d.Expansion, c.N)
	case d.ParentID == nil || *d.ParentID != c.NodeID:
		return rejectf("/data/parent_id", "must be %q, the node being expanded", c.NodeID)
	case len(c.Children) >= s.Config.K:
		return rejectf("/data/node_id", "expansion %d already has k = %d candidates", c.N, s.Config.K)
	case d.State != "" && Digest(d.State) != d.StateDigest:
		return rejectf("/data/state_digest", "is not the SHA-256 of state")
	}
	parent, _, err := getNode(tx, key, c.NodeID)
	if err != nil {
		return err
	}
	if d.Depth != parent.Depth+1 {
		return rejectf("/data/depth", "%d: the parent is at depth %d", d.Depth, parent.Depth)
	}
	if d.Depth > s.Config.MaxDepth {
		return rejectf("/data/depth", "%d exceeds max_depth %d: a node at max_depth is not expanded", d.Depth, s.Config.MaxDepth)
	}
	if _, exists, err := getNode(tx, key, d.NodeID); err != nil {
		return err
	} else if exists {
		return rejectf("/data/node_id", "node %q exists already", d.NodeID)
	}
	// the rules the node's own members decide, as the producer paths
	// check them (a record written straight to Kafka passed none of them)
	if err := events.CheckSearchNode(&d); err != nil {
		return err
	}
	reason := ""
	if d.PrunedReason != nil {
		reason = *d.PrunedReason
	}
	// g is the CostFunction "depth": cost_per_step is a required member of
	// every search.started.v1's config (its schema, since the family's
	// first commit), and the config has no other cost model to declare.
	// Before, any g was taken, and a node's f, so its place in the open
	// set, rested on the producer's word (a tree-search walkthrough,
	// 2026-12-07). The depth is checked against the parent's above.
	if want := float64(d.Depth) * s.Config.CostPerStep; !events.CloseEnough(d.G, want) {
		return rejectf("/data/g", "%s is not depth × cost_per_step = %d × %s = %s", events.ReasonNumber(d.G), d.Depth, events.ReasonNumber(s.Config.CostPerStep), events.ReasonNumber(want))
	}
	seen, dup, err := tx.Get(closedRow(key, d.StateDigest))
	if err != nil {
		return err
	}
	switch {
	case dup && reason != events.PrunedDuplicate:
		return rejectf("/data/pruned_reason", "state %s is in the closed set (node %s): must be %q", d.StateDigest, seen, events.PrunedDuplicate)
	case dup && d.DuplicateOf != string(seen):
		return rejectf("/data/duplicate_of", "%q: the closed set names node %q", d.DuplicateOf, seen)
	case !dup && reason == events.PrunedDuplicate:
		return rejectf("/data/pruned_reason", "state %s is not in the closed set: not a duplicate", d.StateDigest)
	}
	n := Node{
		ID: d.NodeID, Parent: c.NodeID, Depth: d.Depth, Expansion: d.Expansion, State: d.State, Digest: d.StateDigest,
		Candidate: d.Candidate, G: d.G, H: d.H, F: d.F, Score: d.Score, Goal: d.Goal, HardFail: d.HardFail,
		NeedsHuman: d.NeedsHuman, Status: NodeOpen, PrunedReason: reason, DuplicateOf: d.DuplicateOf,
		Report: d.Report, TokensUsed: d.TokensUsed, Time: env.TimeUTC(),
	}
	s.Counts.Nodes++
	n.Seq = s.Counts.Nodes
	if d.Score != nil {
		s.Counts.EvaluatorCalls++
	}
	switch reason {
	case "":
	case events.PrunedDuplicate:
		s.Counts.Duplicates++
		n.Status = NodePruned
	case events.PrunedPrefilter:
		s.Counts.Prefiltered++
		n.Status = NodePruned
	case events.PrunedHardCheck:
		s.Counts.HardFailed++
		n.Status = NodePruned
	default:
		return rejectf("/data/pruned_reason", "%q is not duplicate, prefilter or hard_check", reason)
	}
	if !dup {
		if err := tx.Set(closedRow(key, d.StateDigest), []byte(d.NodeID)); err != nil {
			return err
		}
	}
	c.Children = append(c.Children, d.NodeID)
	return tx.SetJSON(nodeRow(key, n.ID), n)
}

// less orders the open set: lower f first, ties by generation order (then
// node id, for entries built by hand).
func less(a, b OpenEntry) bool {
	if a.F != b.F {
		return a.F < b.F
	}
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.ID < b.ID
}

// NextFrontier is step (7) of Beam-A*: the open set without the expanded
// node, with the unpruned children added, ordered by f (ties by generation
// order), split into the W best (kept: the beam) and the rest (dropped).
// With perDepth (config beam_per_depth) the W best of each depth are kept
// instead: classic level-wise beam search, which with g rising faster than
// h can fall (cost_per_step ≥ 1) expands level by level and keeps the W
// best children of each level, as Tree of Thoughts' breadth-first search.
func NextFrontier(open []OpenEntry, expanded string, children []OpenEntry, w int, perDepth bool) (kept, dropped []OpenEntry) {
	all := make([]OpenEntry, 0, len(open)+len(children))
	for _, o := range open {
		if o.ID != expanded {
			all = append(all, o)
		}
	}
	all = append(all, children...)
	sort.SliceStable(all, func(i, j int) bool { return less(all[i], all[j]) })
	if !perDepth {
		if len(all) <= w {
			return all, nil
		}
		return all[:w], all[w:]
	}
	n := map[int]int{}
	for _, o := range all {
		if n[o.Depth] < w {
			n[o.Depth]++
			kept = append(kept, o)
		} else {
			dropped = append(dropped, o)
		}
	}
	return kept, dropped
}

func ids(es []OpenEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func decide(tx *projections.Tx, env *events.Envelope, s *Search) error {
	var d events.SearchFrontierDecidedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	c := s.Current
	switch {
	case c == nil:
		return rejectf("/data/expansion", "no expansion in flight")
	case d.Expansion != c.N:
		return rejectf("/data/expansion", "%d: the expansion in flight is %d", d.Expansion, c.N)
	case d.NodeID != c.NodeID:
		return rejectf("/data/node_id", "%q: the node being expanded is %q", d.NodeID, c.NodeID)
	case !slices.Equal(d.Children, c.Children):
		return rejectf("/data/children", "%v: the expansion generated %v", d.Children, c.Children)
	}
	if d.TokensUsed > math.MaxInt64-s.Quota.Used {
		return rejectf("/data/tokens_used", "%d: the search's used count (%d) would pass the largest 64-bit integer", d.TokensUsed, s.Quota.Used)
	}
	refund, overrun := max(0, c.Reserved-d.TokensUsed), max(0, d.TokensUsed-c.Reserved)
	if d.TokensRefunded != refund || d.TokensOverrun != overrun {
		return rejectf("/data/tokens_refunded", "reserved %d, used %d: refund %d and overrun %d, not %d and %d", c.Reserved, d.TokensUsed, refund, overrun, d.TokensRefunded, d.TokensOverrun)
	}
	key := s.Key()
	var children []OpenEntry
	nodes := map[string]Node{}
	for _, id := range c.Children {
		n, ok, err := getNode(tx, key, id)
		if err != nil || !ok {
			return fmt.Errorf("treesearch: child %s has no row (%v)", id, err)
		}
		nodes[id] = n
		if n.F != nil {
			children = append(children, OpenEntry{ID: id, F: *n.F, Seq: n.Seq, Depth: n.Depth, Goal: n.Goal, NeedsHuman: n.NeedsHuman})
		}
	}
	kept, dropped := NextFrontier(s.Open, c.NodeID, children, s.Config.BeamWidth, s.Config.BeamPerDepth)
	if !slices.Equal(d.Kept, ids(kept)) {
		return rejectf("/data/kept", "%v: the W = %d best by f are %v", d.Kept, s.Config.BeamWidth, ids(kept))
	}
	if !slices.Equal(nonNil(d.Dropped), ids(dropped)) {
		return rejectf("/data/dropped", "%v: the nodes beyond the beam are %v", d.Dropped, ids(dropped))
	}
	for _, o := range dropped {
		n, ok := nodes[o.ID]
		if !ok {
			var err error
			if n, _, err = getNode(tx, key, o.ID); err != nil {
				return err
			}
		}
		n.Status = NodeDropped
		if err := tx.SetJSON(nodeRow(key, n.ID), n); err != nil {
			return err
		}
	}
	exp, _, err := getNode(tx, key, c.NodeID)
	if err != nil {
		return err
	}
	exp.Status = NodeExpanded
	if err := tx.SetJSON(nodeRow(key, exp.ID), exp); err != nil {
		return err
	}
	s.Open = kept
	s.Counts.BeamDropped += len(dropped)
	if d.Unexpandable {
		s.Counts.Unexpandable++
	}
	s.Quota.Used += d.TokensUsed
	s.Quota.Refunded += refund
	s.Quota.Overrun += overrun
	s.Quota.Outstanding -= c.Reserved
	s.Expansions = c.N
	s.Current = nil
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func pause(env *events.Envelope, s *Search) error {
	var d events.SearchPausedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	switch {
	case s.Status != StatusRunning:
		return rejectf("/type", "search is %s, not running", s.Status)
	case s.Current != nil:
		return rejectf("/data/node_id", "expansion %d is in flight: pause between expansions", s.Current.N)
	case len(s.Open) == 0 || s.Open[0].ID != d.NodeID || !s.Open[0].NeedsHuman:
		return rejectf("/data/node_id", "%q is not the head of the open set waiting for a human", d.NodeID)
	}
	s.Status, s.PausedAt, s.Question = StatusPaused, d.NodeID, d.Question
	return nil
}

func resume(tx *projections.Tx, env *events.Envelope, s *Search) error {
	var d events.SearchResumedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if s.Status != StatusPaused {
		return rejectf("/type", "search is %s, not paused", s.Status)
	}
	key := s.Key()
	n, ok, err := getNode(tx, key, s.PausedAt)
	if err != nil || !ok {
		return fmt.Errorf("treesearch: paused node %s has no row (%v)", s.PausedAt, err)
	}
	n.NeedsHuman = false
	if d.Decision == "reject" {
		n.Status = NodeRejected
		s.Open = s.Open[1:]
	} else {
		s.Open[0].NeedsHuman = false
	}
	// Apply counts this event (s.Seq++) after resume returns
	s.Decisions = append(s.Decisions, Decision{NodeID: s.PausedAt, Question: s.Question, Decision: d.Decision, Note: d.Note, By: d.By, Time: env.TimeUTC(), Seq: s.Seq + 1})
	s.Status, s.PausedAt, s.Question = StatusRunning, "", ""
	return tx.SetJSON(nodeRow(key, n.ID), n)
}

// PathTo returns the node ids from the root to id.
func pathTo(tx *projections.Tx, key, id string) ([]string, error) {
	var rev []string
	for cur := id; cur != ""; {
		n, ok, err := getNode(tx, key, cur)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, rejectf("/data/node_id", "node %q does not exist", cur)
		}
		rev = append(rev, cur)
		cur = n.Parent
	}
	slices.Reverse(rev)
	return rev, nil
}

func complete(tx *projections.Tx, env *events.Envelope, s *Search) error {
	var d events.SearchCompletedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if s.Current != nil {
		return rejectf("/data/outcome", "expansion %d is in flight", s.Current.N)
	}
	if s.Status == StatusPaused {
		return rejectf("/type", "search is paused at %q for a human decision: resume it first (search.resumed.v1)", s.PausedAt)
	}
	key := s.Key()
	switch d.Outcome {
	case events.SearchSolved:
		if len(s.Open) == 0 || s.Open[0].ID != d.NodeID || !s.Open[0].Goal {
			return rejectf("/data/node_id", "%q is not a goal at the head of the open set", d.NodeID)
		}
		if s.Open[0].NeedsHuman {
			// the evaluator asked for a human: the search pauses there
			// (before, a goal that needed one completed the search solved
			// without a decision: a tree-search walkthrough, 2026-12-07)
			return rejectf("/data/node_id", "%q waits for a human decision: pause the search there (search.paused.v1) and resume it approved first", d.NodeID)
		}
		path, err := pathTo(tx, key, d.NodeID)
		if err != nil {
			return err
		}
		if !slices.Equal(path, d.Path) {
			return rejectf("/data/path", "%v: the path from the root is %v", d.Path, path)
		}
		n, _, err := getNode(tx, key, d.NodeID)
		if err != nil {
			return err
		}
		n.Status = NodeGoal
		if err := tx.SetJSON(nodeRow(key, n.ID), n); err != nil {
			return err
		}
		s.GoalNode, s.Path, s.Answer = d.NodeID, path, d.Answer
	case events.SearchExhausted:
		if len(s.Open) != 0 {
			return rejectf("/data/outcome", "exhausted, but the open set holds %d nodes", len(s.Open))
		}
	case events.SearchMaxExpansions:
		if s.Config.MaxExpansions == 0 || s.Expansions < s.Config.MaxExpansions {
			return rejectf("/data/outcome", "max_expansions, but %d of %d expansions ran", s.Expansions, s.Config.MaxExpansions)
		}
	case events.SearchQuotaExhausted:
		if s.Quota.Limit == 0 {
			return rejectf("/data/outcome", "quota_exhausted, but the search has no quota")
		}
		// compared without adding, so no count wraps around (the reserve
		// check's rule): the headroom is limit − used − outstanding
		if q := s.Quota; d.RefusedTokens > 0 && q.Limit-q.Used >= 0 && d.RefusedTokens <= q.Limit-q.Used-q.Outstanding {
			return rejectf("/data/refused_tokens", "%d fits the quota: used %d + outstanding %d + %d ≤ quota %d", d.RefusedTokens, q.Used, q.Outstanding, d.RefusedTokens, q.Limit)
		}
		s.Quota.Refused = d.RefusedTokens
	}
	if d.RefusedTokens > 0 && d.Outcome != events.SearchQuotaExhausted {
		return rejectf("/data/refused_tokens", "only a quota_exhausted outcome names a refused reservation, not %s", d.Outcome)
	}
	s.Status, s.Outcome, s.CompletedAt = StatusCompleted, d.Outcome, env.TimeUTC()
	return nil
}
