package pair

import (
	"context"
	"fmt"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// ContextRetrieved is pair.context.retrieved.v1 (data Context), written by
// the pair worker on chronicle.learned, keyed by session_id. Its registry
// entry lives in events/types.go.
const ContextRetrieved = events.PairContextRetrieved

// Limits and thresholds of PAIR retrieval.
const (
	// PassComposite is the composite at which a session needs no revision
	// (FLUX's meets_criteria).
	PassComposite = 95.0
	// MaxIterations is the last iteration of the loop: a session at this
	// iteration gets no retrieval, only stop_iteration_limit.
	MaxIterations = 3
	// MinConfidence: only memories with a confidence strictly above it are
	// kept.
	MinConfidence = 0.5
	// QueryLimit is how many hits one gap's query asks for.
	QueryLimit = 10
	// MaxExamples is how many examples a category group keeps.
	MaxExamples = 3
	// MaxGaps is how many gaps (in priority order) are queried.
	MaxGaps = 5
	// MaxContent bounds an example's content in the event (characters).
	MaxContent = 2000
	// QueryPrefix starts every gap query.
	QueryPrefix = "Coordination pattern: "
	// Uncategorised is the category of a memory without a specific tag.
	Uncategorised = "uncategorised"
	// ImprovementTag tags the memory of a successful improvement.
	ImprovementTag = "pair_improvement_completed"
	// PatternTag marks an explicit memory as a coordination pattern.
	PatternTag = "coordination_pattern"
)

// Recommendations of a Context.
const (
	// ReviseWithPatterns: revise the session; at least one gap has
	// patterns.
	ReviseWithPatterns = "revise_with_patterns"
	// ReviseWithoutPatterns: revise the session; no gap has patterns.
	ReviseWithoutPatterns = "revise_without_patterns"
	// StopIterationLimit: the session was the last iteration; no retrieval.
	StopIterationLimit = "stop_iteration_limit"
)

// Kinds of an Example.
const (
	// KindPattern: a success memory whose tags mark a coordination
	// strategy (strategy, pair_improvement_completed, coordination_pattern).
	KindPattern = "coordination_pattern"
	// KindSuccess: any other success memory.
	KindSuccess = "success_memory"
)

// Context is the data of pair.context.retrieved.v1: what PAIR retrieved for
// one evaluated session.
type Context struct {
	SessionID     string  `json:"session_id"`
	Iteration     int     `json:"iteration"`
	ParentSession string  `json:"parent_session,omitempty"`
	Composite     float64 `json:"composite"`
	// Gaps are the queried gaps in priority order, each with its patterns.
	Gaps           []GapContext `json:"gaps"`
	Recommendation string       `json:"recommendation"`
	// NextIteration is the iteration the revised attempt should start
	// with (absent on stop_iteration_limit).
	NextIteration int `json:"next_iteration,omitempty"`
}

// GapContext is one gap with the patterns retrieved for it.
type GapContext struct {
	CriterionID         string  `json:"criterion_id"`
	Description         string  `json:"description,omitempty"`
	Score               float64 `json:"score"`
	Severity            string  `json:"severity"`
	ImprovementPriority int     `json:"improvement_priority"`
	// Query is the search text ("" when nothing was retrieved).
	Query string `json:"query,omitempty"`
	// Patterns are the hits grouped by category, best group first.
	Patterns []Group `json:"patterns"`
}

// Group is the hits of one category for a gap.
type Group struct {
	Category string `json:"category"`
	// SuccessRate pools the examples' distinct source sessions: the share
	// whose evaluation meets the criteria; nil when none is known.
	SuccessRate *float64 `json:"success_rate,omitempty"`
	// Sessions is how many distinct source sessions SuccessRate is
	// computed from: a session two examples were learned from counts once
	// (it counted once per example: two examples of one session read
	// "sessions": 2; a new user's walkthrough, 2026-11-30).
	Sessions int `json:"sessions"`
	// Confidence is the mean confidence of the examples.
	Confidence float64 `json:"confidence"`
	// Examples are the group's best hits (at most MaxExamples), by
	// relevance.
	Examples []Example `json:"examples"`
}

// Example is one memory in a Group.
type Example struct {
	// MemoryID is the id of the memory, or of the coordination pattern
	// (Collection says which).
	MemoryID    string   `json:"memory_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Kind        string   `json:"kind"`
	Confidence  float64  `json:"confidence"`
	Relevance   float64  `json:"relevance"`
	SuccessRate *float64 `json:"success_rate,omitempty"`
	Sessions    int      `json:"sessions"`
	// Collection is where the example was found: "Memory" (a success
	// memory) or "CoordinationPattern" (an observed tool sequence).
	Collection search.Collection `json:"collection"`
}

// Searcher runs a memory search; *search.Index implements it.
type Searcher interface {
	Search(ctx context.Context, q search.Query) (search.Result, error)
}

// RateFunc tells, for a memory's source sessions (bare ids in the memory's
// scope), how many were found evaluated (known) and how many of those meet
// their criteria (met).
type RateFunc func(scope string, sessionIDs []string) (met, known int, err error)

// genericTags are tags that say what kind of memory it is, not what it is
// about: they never name a category.
var genericTags = map[string]bool{
	"strategy": true, "anti-pattern": true, ImprovementTag: true, PatternTag: true,
	"low": true, "medium": true, "high": true, "critical": true,
}

// Category is the first tag of tags that is not generic, or Uncategorised.
func Category(tags []string) string {
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !genericTags[strings.ToLower(t)] {
			return t
		}
	}
	return Uncategorised
}

// KindOf is KindPattern when tags mark a coordination strategy, else
// KindSuccess.
func KindOf(tags []string) string {
	for _, t := range tags {
		switch strings.ToLower(t) {
		case "strategy", ImprovementTag, PatternTag:
			return KindPattern
		}
	}
	return KindSuccess
}

// Query is the search text of gap g: QueryPrefix and its description (its
// criterion id when it has none).
func Query(g events.Gap) string {
	d := strings.TrimSpace(g.Description)
	if d == "" {
		d = g.CriterionID
	}
	return QueryPrefix + d
}

// GoalSeparator joins a gap's query and the session's goal in QueryFor.
const GoalSeparator = " — task: "

// QueryFor is the search text of gap g for a session whose task has goal
// (distill.TaskSummary of the task; "" when unknown): Query(g), then
// GoalSeparator and the goal. The goal is the query expansion that lets a
// gap whose criterion says nothing about the task ("no airline-database
// write at all") find what sessions of the same task did: strategy
// memories describe their task by the same goal sentence.
//
// The goal and the gap's part are clipped to MaxQueryGoal characters
// each: the query is part of
// the PAIR context event, and a goal without a sentence break is the
// whole task, so a 960,000-character task made a context of 1.9 MB, above
// the event limit, and the pair worker dead-lettered the (small)
// evaluation (a raw-Kafka walkthrough, 2026-11-30).
func QueryFor(g events.Gap, goal string) string {
	q := distill.ClipWords(Query(g), MaxQueryGoal)
	if goal = strings.TrimSpace(goal); goal == "" {
		return q
	}
	return q + GoalSeparator + distill.ClipWords(goal, MaxQueryGoal)
}

// MaxQueryGoal is the most characters (runes) of a session's goal, and of
// the gap's part, a PAIR query carries (1,000 each: tau-bench's goal
// sentences and criteria are far shorter).
const MaxQueryGoal = 1000

// SearchQuery is the memory search PAIR runs for gap g of session
// sessionID, whose task has goal: text QueryFor(g, goal), outcome success,
// memories of the session excluded, min_confidence MinConfidence (Keep
// then drops those equal to it), QueryLimit hits, scopes readable
// restricts by readable (nil: all).
func SearchQuery(g events.Gap, goal, sessionID string, readable func(scope string) bool) search.Query {
	mc := MinConfidence
	return search.Query{
		Text: QueryFor(g, goal), Outcome: events.OutcomeSuccess, Limit: QueryLimit, MinConfidence: &mc,
		ExcludeSourceSession: sessionID, Readable: readable,
	}
}

// Keep returns the hits PAIR may use, in order: outcome success,
// confidence strictly above MinConfidence, not distilled from
// excludeSession. (The search already filters; Keep makes the rule hold
// whatever Searcher answered.)
func Keep(hits []search.Hit, excludeSession string) []search.Hit {
	out := make([]search.Hit, 0, len(hits))
next:
	for _, h := range hits {
		if h.Outcome != events.OutcomeSuccess || h.Confidence <= MinConfidence {
			continue
		}
		for _, s := range h.SourceSessions {
			if s == excludeSession {
				continue next
			}
		}
		out = append(out, h)
	}
	return out
}

// WeightedGaps are the gaps PAIR queries: those of criteria with weight > 0
// (all gaps when no criterion has a weight), in the evaluation's priority
// order, at most MaxGaps.
func WeightedGaps(ev events.EvaluationData) []events.Gap {
	gs := weightedAll(ev)
	return gs[:min(len(gs), MaxGaps)]
}

// GroupHits groups hits (in relevance order) by Category: groups by their
// best hit's relevance (then category name), examples in hit order, at
// most MaxExamples each. rate, when not nil, gives each example's success
// rate from its source sessions and the group's pooled one.
func GroupHits(hits []search.Hit, rate RateFunc) ([]Group, error) {
	type acc struct {
		g    Group
		best float64
		// sources are the examples' source sessions by scope, each once,
		// in first-seen order (the group's pooled rate)
		sources map[string][]string
		scopes  []string
	}
	byCat := map[string]*acc{}
	for _, h := range hits {
		cat := Category(h.Tags)
		a, ok := byCat[cat]
		if !ok {
			a = &acc{g: Group{Category: cat}, best: h.Relevance}
			byCat[cat] = a
		}
		if len(a.g.Examples) == MaxExamples {
			continue
		}
		ex := Example{MemoryID: h.ID, Title: h.Title, Description: h.Description, Content: distill.Clip(h.Content, MaxContent),
			Kind: KindOf(h.Tags), Confidence: h.Confidence, Relevance: h.Relevance, Collection: h.Collection}
		if h.Collection == search.Patterns {
			ex.Kind = KindPattern
		} else {
			ex.Collection = search.Memories
		}
		if rate != nil && len(h.SourceSessions) > 0 {
			met, known, err := rate(h.Scope, h.SourceSessions)
			if err != nil {
				return nil, err
			}
			if known > 0 {
				r := float64(met) / float64(known)
				ex.SuccessRate, ex.Sessions = &r, known
			}
			if a.sources == nil {
				a.sources = map[string][]string{}
			}
			if _, ok := a.sources[h.Scope]; !ok {
				a.scopes = append(a.scopes, h.Scope)
			}
			for _, id := range h.SourceSessions {
				if !slices.Contains(a.sources[h.Scope], id) {
					a.sources[h.Scope] = append(a.sources[h.Scope], id)
				}
			}
		}
		a.best = max(a.best, h.Relevance)
		a.g.Examples = append(a.g.Examples, ex)
	}
	out := make([]*acc, 0, len(byCat))
	for _, a := range byCat {
		var sum float64
		for _, e := range a.g.Examples {
			sum += e.Confidence
		}
		a.g.Confidence = round4(sum / float64(len(a.g.Examples)))
		var met, know int
		for _, sc := range a.scopes {
			m, k, err := rate(sc, a.sources[sc])
			if err != nil {
				return nil, err
			}
			met, know = met+m, know+k
		}
		if know > 0 {
			r := float64(met) / float64(know)
			a.g.SuccessRate, a.g.Sessions = &r, know
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].best != out[j].best {
			return out[i].best > out[j].best
		}
		return out[i].g.Category < out[j].g.Category
	})
	groups := make([]Group, len(out))
	for i, a := range out {
		groups[i] = a.g
	}
	return groups, nil
}

// Retrieve runs PAIR retrieval for the gaps of session sessionID, whose
// task has goal (see QueryFor): per gap,
// SearchQuery through s over success memories and over coordination
// patterns (the same query with Collection search.Patterns), both ranked
// by the index's one relevance formula and merged by relevance (ties by
// id), then Keep and GroupHits. It returns one GapContext per gap, in
// order.
func Retrieve(ctx context.Context, s Searcher, rate RateFunc, sessionID, goal string, gaps []events.Gap, readable func(scope string) bool) ([]GapContext, error) {
	out := make([]GapContext, 0, len(gaps))
	for _, g := range gaps {
		hits, err := Ranked(ctx, s, g, goal, sessionID, readable)
		if err != nil {
			return nil, err
		}
		groups, err := GroupHits(hits, rate)
		if err != nil {
			return nil, err
		}
		gc := gapContext(g)
		gc.Query, gc.Patterns = QueryFor(g, goal), groups
		out = append(out, gc)
	}
	return out, nil
}

// Ranked is what PAIR retrieves for gap g of session sessionID (whose task
// has goal) before grouping: SearchQuery over success memories and over coordination
// patterns (the same query with Collection search.Patterns), each hit
// marked with its collection, merged by relevance (both come from the
// index's one formula; ties by id), through Keep.
func Ranked(ctx context.Context, s Searcher, g events.Gap, goal, sessionID string, readable func(scope string) bool) ([]search.Hit, error) {
	q := SearchQuery(g, goal, sessionID, readable)
	var hits []search.Hit
	for _, c := range []search.Collection{search.Memories, search.Patterns} {
		q.Collection = c
		res, err := s.Search(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("pair: search %s for gap %s: %w", c, g.CriterionID, err)
		}
		for _, h := range res.Memories {
			h.Collection = c
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Relevance != hits[j].Relevance {
			return hits[i].Relevance > hits[j].Relevance
		}
		return hits[i].ID < hits[j].ID
	})
	return Keep(hits, sessionID), nil
}

func gapContext(g events.Gap) GapContext {
	return GapContext{CriterionID: g.CriterionID, Description: g.Description, Score: g.Score, Severity: g.Severity,
		ImprovementPriority: g.ImprovementPriority, Patterns: []Group{}}
}

// Build assembles the Context of an evaluation at iteration (≥ 1): at
// MaxIterations or later the gaps without patterns and StopIterationLimit;
// otherwise the retrieved gaps and ReviseWithPatterns or
// ReviseWithoutPatterns, with NextIteration = iteration + 1. retrieved is
// ignored at the limit.
func Build(ev events.EvaluationData, iteration int, parent string, retrieved []GapContext) Context {
	c := Context{SessionID: ev.SessionID, Iteration: iteration, ParentSession: parent, Composite: ev.Composite}
	if iteration >= MaxIterations {
		c.Recommendation = StopIterationLimit
		c.Gaps = []GapContext{}
		for _, g := range WeightedGaps(ev) {
			c.Gaps = append(c.Gaps, gapContext(g))
		}
		return c
	}
	c.Gaps = retrieved
	if c.Gaps == nil {
		c.Gaps = []GapContext{}
	}
	c.NextIteration = iteration + 1
	c.Recommendation = ReviseWithoutPatterns
	for _, g := range c.Gaps {
		if len(g.Patterns) > 0 {
			c.Recommendation = ReviseWithPatterns
			break
		}
	}
	return c
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
