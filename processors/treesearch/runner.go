package treesearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Source is the CloudEvents source of the events the runner writes.
const Source = "chronicle/treesearch"

// Estimates of a reservation (step 1 of Beam-A*), in cl100k_base tokens:
// each of the k candidates may cost up to CandidateTokens of proposer
// output, and its evaluation the evaluator prompt plus EvalAnswerTokens.
const (
	CandidateTokens  = 64
	EvalAnswerTokens = 64
)

// Runner drives quota-aware Beam-A* (Flujo's TreeSearchStep) on one
// search at a time. It writes every step as events and reads the search's
// state back only from the treesearch projection, so after a crash it
// resumes from the last frontier the projection holds: an expansion that
// was in flight is recomputed (the proposer and evaluator are
// deterministic) and only the events the projection lacks are written.
// Event ids are derived from the search key, expansion and node id.
type Runner struct {
	Store     *projections.Store
	Producer  *events.Producer
	Proposer  Proposer
	Evaluator Evaluator
	Tokenizer *Tokenizer
	// ApplyTimeout bounds the wait for the projection to apply what the
	// runner wrote (default 30 s): an event that was dead-lettered instead
	// never shows up.
	ApplyTimeout time.Duration
	// Stats, when set, is incremented as the runner works.
	Stats *Stats

	applied chan struct{}
}

// Stats counts the runner's work across searches.
type Stats struct {
	ProposerCalls  int
	EvaluatorCalls int
	Expansions     int
}

// NewRunner returns a runner whose waits are woken by the store's commit
// hook.
func NewRunner(store *projections.Store, producer *events.Producer, p Proposer, e Evaluator) (*Runner, error) {
	t, err := CL100K()
	if err != nil {
		return nil, err
	}
	r := &Runner{Store: store, Producer: producer, Proposer: p, Evaluator: e, Tokenizer: t, applied: make(chan struct{}, 1)}
	store.OnCommit(func(proj string, _ []string) {
		if proj == Name {
			select {
			case r.applied <- struct{}{}:
			default:
			}
		}
	})
	return r, nil
}

// StartRequest describes a new search.
type StartRequest struct {
	Scope     string
	SearchID  string
	Goal      string
	RootState string
	Config    events.SearchConfig
	Model     string
}

// ErrSetupDiffers is returned (wrapped, naming the field) by Runner.Start
// when the search already exists with another goal, root state, config,
// proposer, evaluator or model: a search's setup is fixed by its
// search.started.v1, so running it again with another one would report
// the first run's result as the new one's.
var ErrSetupDiffers = errors.New("treesearch: the search already exists with another setup")

// Start writes search.started.v1 unless the projection already holds the
// search, and waits until it does. It returns the search's key. A search
// already held is continued if its setup is the request's (and the
// runner's proposer and evaluator); else ErrSetupDiffers.
func (r *Runner) Start(ctx context.Context, req StartRequest) (string, error) {
	if err := events.CheckID(req.SearchID); err != nil {
		return "", fmt.Errorf("treesearch: search_id: %w", err)
	}
	key := events.EntityKey(req.Scope, req.SearchID)
	s, ok, err := Get(r.Store, key)
	if err != nil {
		return key, err
	}
	if ok {
		return key, r.sameSetup(s, req)
	}
	env, err := r.event(key, "started", events.SearchStarted, events.SearchStartedData{
		SearchID: req.SearchID, Goal: req.Goal, RootState: req.RootState, Config: req.Config,
		Proposer: r.Proposer.Component(), Evaluator: r.Evaluator.Component(), Model: req.Model,
	})
	if err != nil {
		return "", err
	}
	if err := r.Producer.Publish(ctx, env); err != nil {
		return "", err
	}
	return key, r.waitSeq(ctx, key, 1)
}

// sameSetup is nil if s was started as req (with r's components), else
// ErrSetupDiffers naming the first field that differs.
func (r *Runner) sameSetup(s Search, req StartRequest) error {
	for _, f := range []struct {
		name       string
		held, asks any
	}{
		{"goal", s.Goal, req.Goal},
		{"root_state", s.RootState, req.RootState},
		{"config", s.Config, req.Config},
		{"proposer", s.Proposer, r.Proposer.Component()},
		{"evaluator", s.Evaluator, r.Evaluator.Component()},
		{"model", s.Model, req.Model},
	} {
		// compared as JSON, as the event recorded them (and whatever
		// fields the types gain)
		held, _ := json.Marshal(f.held)
		asks, _ := json.Marshal(f.asks)
		if string(held) != string(asks) {
			// no advice here: the callers name their own ways to another
			// search (search game24's said "another search id", which no
			// flag of it sets: a re-test, 2026-12-01)
			name, h, a := firstDifference(f.name, held, asks)
			return fmt.Errorf("%w: search %q has %s %s, this run asks for %s", ErrSetupDiffers, s.ID, name, h, a)
		}
	}
	return nil
}

// firstDifference narrows two differing JSON values to the first member
// (in key order) where they differ, so that a config differing in one
// field is named by it ("config.quota_tokens 3000 … 1"), not printed
// whole twice (a walkthrough, 2026-12-05). A member one side omits (an
// omitempty zero) is shown as "unset". Values that are not both
// objects are returned as they are.
func firstDifference(name string, held, asks []byte) (string, string, string) {
	var h, a map[string]json.RawMessage
	if json.Unmarshal(held, &h) != nil || json.Unmarshal(asks, &a) != nil || h == nil || a == nil {
		return name, string(held), string(asks)
	}
	keys := make([]string, 0, len(h)+len(a))
	for k := range h {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := h[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		hv, hok := h[k]
		av, aok := a[k]
		switch {
		case hok && aok && string(hv) == string(av):
			continue
		case hok && aok:
			return firstDifference(name+"."+k, hv, av)
		case hok:
			return name + "." + k, string(hv), "unset"
		default:
			return name + "." + k, "unset", string(av)
		}
	}
	return name, string(held), string(asks)
}

func (r *Runner) event(key, suffix string, t events.Type, payload any) (events.Envelope, error) {
	env, err := events.New(t, Source, key+"/"+suffix, time.Now(), payload)
	if err != nil {
		return env, err
	}
	scope, _, _ := events.SplitEntityKey(key)
	env.Scope = scope
	env.CorrelationID = key
	return env, nil
}

// publish writes envs and waits until the projection applied all of them.
func (r *Runner) publish(ctx context.Context, key string, seq int, envs ...events.Envelope) error {
	if len(envs) == 0 {
		return nil
	}
	if err := r.Producer.Publish(ctx, envs...); err != nil {
		return err
	}
	return r.waitSeq(ctx, key, seq+len(envs))
}

// waitSeq waits until the projection's Seq of search key reaches seq.
func (r *Runner) waitSeq(ctx context.Context, key string, seq int) error {
	timeout := r.ApplyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s, ok, err := Get(r.Store, key)
		if err != nil {
			return err
		}
		if ok && s.Seq >= seq {
			return nil
		}
		select {
		case <-r.applied:
		case <-time.After(20 * time.Millisecond):
		case <-deadline.C:
			return fmt.Errorf("treesearch: search %s: the projection did not apply the runner's events within %v (dead-lettered? see chronicle.deadletter)", key, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ErrPaused is returned by Run when the search paused for a human.
var ErrPaused = errors.New("treesearch: search paused for a human decision")

// Run drives search key until it completes (returning the final state) or
// pauses (ErrPaused).
func (r *Runner) Run(ctx context.Context, key string) (Search, error) {
	for {
		s, ok, err := Get(r.Store, key)
		if err != nil {
			return s, err
		}
		if !ok {
			return s, fmt.Errorf("treesearch: search %s is not in the projection", key)
		}
		switch s.Status {
		case StatusCompleted:
			return s, nil
		case StatusPaused:
			return s, ErrPaused
		}
		if s.Current != nil {
			if err := r.expand(ctx, s); err != nil {
				return s, err
			}
			continue
		}
		if err := r.step(ctx, s); err != nil {
			return s, err
		}
	}
}

// step starts the next expansion, or completes or pauses the search.
func (r *Runner) step(ctx context.Context, s Search) error {
	key := s.Key()
	complete := func(d events.SearchCompletedData) error {
		d.SearchID = s.ID
		env, err := r.event(key, "completed", events.SearchCompleted, d)
		if err != nil {
			return err
		}
		return r.publish(ctx, key, s.Seq, env)
	}
	if len(s.Open) == 0 {
		return complete(events.SearchCompletedData{Outcome: events.SearchExhausted})
	}
	head := s.Open[0]
	// a goal that needs a human is paused for the decision before it
	// completes the search, as any node that needs one is (before, the goal
	// completed it solved and the human was never asked: a tree-search
	// walkthrough, 2026-12-07); approved, it completes the search
	if head.NeedsHuman {
		n, _, err := GetNode(r.Store, key, head.ID)
		if err != nil {
			return err
		}
		env, err := r.event(key, "paused/"+strconv.Itoa(s.Expansions)+"/"+head.ID, events.SearchPaused, events.SearchPausedData{
			SearchID: s.ID, NodeID: head.ID, Question: "node " + head.ID + " needs a human decision: " + n.Report,
		})
		if err != nil {
			return err
		}
		return r.publish(ctx, key, s.Seq, env)
	}
	if head.Goal {
		path, err := r.path(key, head.ID)
		if err != nil {
			return err
		}
		ids := make([]string, len(path))
		for i, p := range path {
			ids[i] = p.NodeID
		}
		return complete(events.SearchCompletedData{Outcome: events.SearchSolved, NodeID: head.ID, Path: ids, Answer: path[len(path)-1].Candidate})
	}
	if s.Config.MaxExpansions > 0 && s.Expansions >= s.Config.MaxExpansions {
		return complete(events.SearchCompletedData{Outcome: events.SearchMaxExpansions})
	}
	path, err := r.path(key, head.ID)
	if err != nil {
		return err
	}
	prompt := r.prompt(s.Goal, path)
	p := r.Tokenizer.Count(prompt)
	estimate := p + int64(s.Config.K)*(CandidateTokens+p+EvalAnswerTokens)
	if q := s.Quota; q.Limit > 0 && q.Used+q.Outstanding+estimate > q.Limit {
		return complete(events.SearchCompletedData{Outcome: events.SearchQuotaExhausted, RefusedTokens: estimate})
	}
	n := s.Expansions + 1
	env, err := r.event(key, "e"+strconv.Itoa(n)+"/reserved", events.SearchQuotaReserved, events.SearchQuotaReservedData{
		SearchID: s.ID, Expansion: n, NodeID: head.ID, Tokens: estimate,
	})
	if err != nil {
		return err
	}
	return r.publish(ctx, key, s.Seq, env)
}

// prompt is the goal-pinned prompt with the path summary.
func (r *Runner) prompt(goal string, path []Step) string { return Prompt(r.Tokenizer, goal, path) }

// Prompt is the start of every proposer prompt (and, followed by the
// candidate, of every evaluator prompt): the objective, pinned, then the
// path summary.
func Prompt(t *Tokenizer, goal string, path []Step) string {
	return PinGoal(goal) + "Steps so far:\n" + PathSummary(t, path, PathSummaryTokens) + "\n"
}

// path returns the steps from the root to node id, from the projection.
func (r *Runner) path(key, id string) ([]Step, error) {
	var rev []Step
	for cur := id; cur != ""; {
		n, ok, err := GetNode(r.Store, key, cur)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("treesearch: search %s: node %s has no row", key, cur)
		}
		rev = append(rev, Step{NodeID: n.ID, Depth: n.Depth, Candidate: n.Candidate, State: n.State})
		cur = n.Parent
	}
	slices.Reverse(rev)
	return rev, nil
}

// check runs the evaluator's pre-filter and hard checks, except for a
// duplicate, which is killed before any check.
func (r *Runner) check(dup bool, req EvalRequest) (reason, report string) {
	if dup {
		return "", ""
	}
	return r.Evaluator.Check(req)
}

// ChildID is the id of the i-th candidate of node parent: parent "." i,
// i with two digits at least, so that siblings list in generation order.
func ChildID(parent string, i int) string { return fmt.Sprintf("%s.%02d", parent, i) }

// expand runs steps (2)–(7) of Beam-A* for the expansion in flight: expand
// k candidates, isolate (each is judged on its own path only), dedup
// against the closed set, pre-filter and hard checks, evaluate, then
// reconcile the tokens and keep the beam.
func (r *Runner) expand(ctx context.Context, s Search) error {
	key := s.Key()
	c := s.Current
	path, err := r.path(key, c.NodeID)
	if err != nil {
		return err
	}
	parent := path[len(path)-1]
	prompt := r.prompt(s.Goal, path)
	var prop Proposal
	used := int64(0)
	if parent.Depth < s.Config.MaxDepth {
		prop, err = r.Proposer.Propose(ctx, ProposeRequest{Goal: s.Goal, Prompt: prompt, Path: path, K: s.Config.K})
		if err != nil && !errors.Is(err, ErrUnknownState) {
			return fmt.Errorf("treesearch: search %s: propose for node %s: %w", key, c.NodeID, err)
		}
		if errors.Is(err, ErrUnknownState) {
			prop = Proposal{Unexpandable: true}
		}
		if r.Stats != nil {
			r.Stats.ProposerCalls++
		}
		used += r.Tokenizer.Count(prompt) + r.Tokenizer.Count(prop.Raw)
	}
	cands := prop.Candidates
	if len(cands) > s.Config.K {
		cands = cands[:s.Config.K]
	}
	batch := map[string]string{} // digest → node id, for siblings not yet in the projection
	var envs []events.Envelope
	var childIDs []string
	g := float64(parent.Depth+1) * s.Config.CostPerStep
	for i, cand := range cands {
		id := ChildID(c.NodeID, i)
		childIDs = append(childIDs, id)
		if _, ok, err := GetNode(r.Store, key, id); err != nil {
			return err
		} else if ok {
			continue // written before a crash
		}
		digest := Digest(cand.State)
		pid := c.NodeID
		d := events.SearchNodeData{
			SearchID: s.ID, NodeID: id, ParentID: &pid, Expansion: c.N, Depth: parent.Depth + 1,
			State: cand.State, StateDigest: digest, Candidate: cand.Text, G: g,
		}
		first, dup := batch[digest]
		if !dup {
			var err error
			if first, dup, err = Closed(r.Store, key, digest); err != nil {
				return err
			}
		}
		// isolation: the candidate is judged on its own path only
		req := EvalRequest{Goal: s.Goal, Path: path, Candidate: cand}
		switch reason, report := r.check(dup, req); {
		case dup:
			reason := events.PrunedDuplicate
			d.PrunedReason, d.DuplicateOf = &reason, first
		case reason != "":
			batch[digest] = id
			d.PrunedReason, d.Report, d.HardFail = &reason, report, reason == events.PrunedHardCheck
		default:
			batch[digest] = id
			req.Prompt = prompt + "Candidate next step:\n" + cand.Text
			v, err := r.Evaluator.Evaluate(ctx, req)
			if err != nil {
				return fmt.Errorf("treesearch: search %s: evaluate node %s: %w", key, id, err)
			}
			if r.Stats != nil {
				r.Stats.EvaluatorCalls++
			}
			score := min(max(v.Score, 0), 1)
			h := 1 - score
			f := g + h
			d.Score, d.H, d.F, d.Goal, d.NeedsHuman, d.Report = &score, &h, &f, v.Goal, v.NeedsHuman, v.Report
			d.TokensUsed = r.Tokenizer.Count(req.Prompt) + r.Tokenizer.Count(v.Report)
		}
		env, err := r.event(key, "n/"+id, events.SearchNodeExpanded, d)
		if err != nil {
			return err
		}
		envs = append(envs, env)
	}
	if err := r.publish(ctx, key, s.Seq, envs...); err != nil {
		return err
	}
	s, _, err = Get(r.Store, key)
	if err != nil {
		return err
	}
	if s.Current == nil {
		return fmt.Errorf("treesearch: search %s: expansion %d is no longer in flight", key, c.N)
	}
	if !slices.Equal(s.Current.Children, nonNil(childIDs)) {
		return fmt.Errorf("treesearch: search %s: expansion %d holds children %v, the proposer gave %v (not deterministic?)", key, c.N, s.Current.Children, childIDs)
	}
	var children []OpenEntry
	for _, id := range childIDs {
		n, _, err := GetNode(r.Store, key, id)
		if err != nil {
			return err
		}
		used += n.TokensUsed // evaluator tokens, kept on the node so a resumed expansion counts them too
		if n.F != nil {
			children = append(children, OpenEntry{ID: id, F: *n.F, Seq: n.Seq, Depth: n.Depth, Goal: n.Goal, NeedsHuman: n.NeedsHuman})
		}
	}
	kept, dropped := NextFrontier(s.Open, c.NodeID, children, s.Config.BeamWidth, s.Config.BeamPerDepth)
	env, err := r.event(key, "e"+strconv.Itoa(c.N)+"/decided", events.SearchFrontierDecided, events.SearchFrontierDecidedData{
		SearchID: s.ID, Expansion: c.N, NodeID: c.NodeID, Children: nonNil(childIDs), Kept: ids(kept), Dropped: nonNil(ids(dropped)),
		TokensUsed: used, TokensRefunded: max(0, c.Reserved-used), TokensOverrun: max(0, used-c.Reserved), Unexpandable: prop.Unexpandable,
	})
	if err != nil {
		return err
	}
	if r.Stats != nil {
		r.Stats.Expansions++
	}
	return r.publish(ctx, key, s.Seq, env)
}
