package pair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chronicle-dev/chronicle/processors/distill"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// Source is the CloudEvents source of the events the pair worker writes.
const Source = "chronicle/pair"

// Worker is the pair worker: a processors.Worker on chronicle.evaluations
// that writes pair.context.retrieved.v1 for sessions below PassComposite and
// the pair_improvement_completed memory of a revision that fixed its
// parent (see the package documentation).
type Worker struct {
	// Store holds the sessions projection (the handled session's iteration,
	// parent, scope, task and calls: rows of its own record key, which this
	// instance projects) and the Outcomes table (every other session's
	// evaluation: a revision's parent, the sources behind success rates).
	Store *projections.Store
	// Index answers the memory searches (a *search.Index).
	Index Searcher
	// Producer publishes the derived events.
	Producer *events.Producer
	// Readable says whether a session in sessionScope may see memories of
	// memoryScope. Default: only the session's own scope.
	Readable func(sessionScope, memoryScope string) bool
	// Fresh, when set, returns once the Outcomes table has applied every
	// evaluation the log held when it was called
	// (processors.GlobalTableRunner.CaughtUp), or ctx's error. The table
	// is read from the log, so it may be behind the event handled; the
	// worker calls Fresh at most once per evaluation, the first time a
	// session it needs has no outcome, and reads again. Nil: the table is
	// read as it is (a test, or a store that no runner feeds).
	Fresh func(ctx context.Context) error
	// FreshWait bounds that wait (default 30 s). Past it the evaluation
	// fails, naming the table: it goes to the dead-letter topic, to be
	// re-driven (chronicle deadletter redrive), rather than being
	// handled with a table that misses sessions.
	FreshWait time.Duration
}

// readingScopes is a Searcher whose queries carry scopes as ReadScopes:
// what the query's Readable accepts, so the index caches PAIR's query
// vectors in the partition of those scopes' searchers (search.Query
// ReadScopes), never where another scope's searcher could hit them.
type readingScopes struct {
	Searcher
	scopes []string
}

// Search implements Searcher.
func (r readingScopes) Search(ctx context.Context, q search.Query) (search.Result, error) {
	q.ReadScopes = r.scopes
	return r.Searcher.Search(ctx, q)
}

// DefaultFreshWait is Worker.FreshWait's default.
const DefaultFreshWait = 30 * time.Second

var (
	_ processors.Worker = (*Worker)(nil)
	_ Searcher          = (*search.Index)(nil)
)

// Name implements processors.Worker.
func (*Worker) Name() string { return "pair" }

// Topic implements processors.Worker.
func (*Worker) Topic() events.Topic { return events.TopicEvaluations }

// Handle implements processors.Worker: it publishes what Derive returns. A
// failure (an unknown session, a search or produce error) is returned, and
// the evaluation goes to the dead-letter topic with the reason — except
// the vector store's being away (search.ErrStoreUnavailable, ErrTimeout,
// ErrStoreReset), which waiting cures: wrapped in processors.ErrRetryLater,
// the evaluation is handed again until the store answers (each attempt
// bounded by search.SearchTimeout).
func (w *Worker) Handle(ctx context.Context, env *events.Envelope) error {
	out, err := w.Derive(ctx, env)
	if err != nil && (errors.Is(err, search.ErrStoreUnavailable) || errors.Is(err, search.ErrTimeout) || errors.Is(err, search.ErrStoreReset)) {
		return fmt.Errorf("%w: %w", processors.ErrRetryLater, err)
	}
	if err != nil || len(out) == 0 {
		return err
	}
	return w.Producer.PublishDerived(ctx, out...)
}

// Plan is what the worker writes for one evaluation: a Context, an
// improvement memory, or nothing (both nil).
type Plan struct {
	// Context is the data of pair.context.retrieved.v1 (composite below
	// PassComposite).
	Context *Context
	// Improvement is the pair_improvement_completed memory (composite at
	// or above PassComposite, parent below it).
	Improvement *events.MemoryRecordedData
	// Minute is the pair_improvement_completed coordination minute written
	// with Improvement, on session MinuteSession (the parent).
	Minute        *events.MinuteData
	MinuteSession string
}

// Plan decides what to write for evaluation ev: nothing for a
// not_evaluated evaluation, a session at PassComposite without a parent
// below it, or a later revision (revision > 0, not first_scored) at
// PassComposite; the Context below PassComposite, of any revision
// (retrieval unless the session is at MaxIterations; Derive writes one
// per session); the improvement memory of an evaluation at PassComposite,
// at completion or first scored, whose parent scored below it. scope is
// the scope of the evaluation event (the memory's content address depends
// on it). The session must be in the sessions projection. Before, every
// later revision was skipped, so a session that a tool call arriving
// after its completion took below 95 never got a context (a re-test,
// 2026-12-01: AWAITING_CONTEXT for good).
func (w *Worker) Plan(ctx context.Context, scope string, ev events.EvaluationData) (Plan, error) {
	if ev.Recommendation == events.NotEvaluated || ev.Revision > 0 && !ev.FirstScored && ev.Composite >= PassComposite {
		// not_evaluated: the composite is no evidence either way, nothing
		// to revise from (LoopNotEvaluated); a later revision at 95 or
		// above records no improvement memory again
		return Plan{}, nil
	}
	v, ok, err := sessions.Get(w.Store, events.EntityKey(scope, ev.SessionID))
	if err != nil {
		return Plan{}, err
	}
	if !ok {
		return Plan{}, fmt.Errorf("pair: session %s is not in the sessions projection", ev.SessionID)
	}
	iteration := max(1, v.Iteration)
	look := &outcomes{w: w, ctx: ctx}
	if ev.Composite >= PassComposite {
		return w.improvement(look, scope, ev, iteration, v)
	}
	var retrieved []GapContext
	if iteration < MaxIterations {
		readable := func(scope string) bool { return scope == v.Scope }
		var idx Searcher = readingScopes{w.Index, []string{v.Scope}}
		if w.Readable != nil {
			readable = func(scope string) bool { return w.Readable(v.Scope, scope) }
			idx = w.Index // reads scopes no list names: its queries are not cached
		}
		in, _, err := sessions.Input(w.Store, v.Key())
		if err != nil {
			return Plan{}, err
		}
		if retrieved, err = Retrieve(ctx, idx, look.rate, ev.SessionID, distill.TaskSummary(in.Task), WeightedGaps(ev), readable); err != nil {
			return Plan{}, err
		}
	}
	c := Build(ev, iteration, v.ParentSession, retrieved)
	return Plan{Context: &c}, nil
}

// Derive computes the events the worker writes for env (Plan as events)
// without publishing them: pair.context.retrieved.v1, or memory.recorded.v1
// and the minute, or none (also for types other than
// evaluation.completed.v1, and for a session whose context the pairloop
// projection already holds). Ids are derived from env (events.Derive), so
// a repeat gives identical ids.
func (w *Worker) Derive(ctx context.Context, env *events.Envelope) ([]events.Envelope, error) {
	if env.Type != events.EvaluationCompleted {
		return nil, nil
	}
	var ev events.EvaluationData
	if err := env.Decode(&ev); err != nil {
		return nil, err
	}
	if ev.Composite < PassComposite {
		// one context per session: when the pairloop projection holds one
		// already (written by POST …/improve, or by an earlier run), a
		// second retrieval could answer differently under the same
		// derived id, a conflicting duplicate
		st, ok, err := GetLoop(w.Store, events.EntityKey(env.EffectiveScope(), ev.SessionID))
		if err != nil {
			return nil, err
		}
		if ok && st.Context != nil {
			return nil, nil
		}
	}
	p, err := w.Plan(ctx, env.EffectiveScope(), ev)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Context != nil:
		out, err := events.Derive(env, Source, ContextRetrieved, 0, p.Context)
		if err != nil {
			return nil, err
		}
		return []events.Envelope{out}, nil
	case p.Improvement != nil:
		mem, err := events.Derive(env, Source, events.MemoryRecorded, 0, p.Improvement)
		if err != nil {
			return nil, err
		}
		out := []events.Envelope{mem}
		if p.Minute != nil {
			// the minute belongs to the parent session: its sessionid (the
			// record key on chronicle.sessions) is the parent's; its id is
			// still derived from the evaluation, so a repeat is a duplicate
			minute, err := events.Derive(env, Source, events.MinuteRecorded, 0, p.Minute)
			if err != nil {
				return nil, err
			}
			minute.SessionID = p.MinuteSession
			if err := events.Validate(&minute); err != nil {
				return nil, fmt.Errorf("pair: minute: %w", err)
			}
			out = append(out, minute)
		}
		return out, nil
	}
	return nil, nil
}

// outcomes reads the Outcomes table for one evaluation: the first miss
// waits for the table to catch up with the log (Worker.Fresh), once.
type outcomes struct {
	w      *Worker
	ctx    context.Context
	waited bool
}

// get is the outcome of session id in scope; ok is false when the table,
// caught up, has none.
func (o *outcomes) get(scope, id string) (Outcome, bool, error) {
	key := events.EntityKey(scope, id)
	out, ok, err := GetOutcome(o.w.Store, key)
	if err != nil || ok || o.waited || o.w.Fresh == nil {
		return out, ok, err
	}
	o.waited = true
	wait := o.w.FreshWait
	if wait <= 0 {
		wait = DefaultFreshWait
	}
	ctx, cancel := context.WithTimeout(o.ctx, wait)
	defer cancel()
	if err := o.w.Fresh(ctx); err != nil {
		return out, false, fmt.Errorf("pair: session %s: the %s table has not caught up with %s within %s: %w", id, OutcomesName, events.TopicEvaluations, wait, err)
	}
	return GetOutcome(o.w.Store, key)
}

// rate is the RateFunc of the Outcomes table: a session is known when it
// has an evaluation, met when that evaluation meets its criteria.
func (o *outcomes) rate(scope string, ids []string) (met, known int, err error) {
	for _, id := range ids {
		out, ok, err := o.get(scope, id)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			continue
		}
		known++
		if out.Recommendation == events.MeetsCriteria {
			met++
		}
	}
	return met, known, nil
}

// improvement returns the Plan of session v (evaluated at or above
// PassComposite): the pair_improvement_completed memory and minute, or
// nothing when it has no parent or its parent is evaluated at or above
// PassComposite. A parent without an evaluation (the revision evaluated
// first, or no such session) is an error: the evaluation is dead-lettered
// saying so, to be re-driven. The parent's evaluation comes from the Outcomes table:
// on a cluster the parent may be projected by another instance.
func (w *Worker) improvement(look *outcomes, scope string, ev events.EvaluationData, iteration int, v sessions.View) (Plan, error) {
	if v.ParentSession == "" {
		return Plan{}, nil
	}
	parent, ok, err := look.get(v.Scope, v.ParentSession)
	if err != nil {
		return Plan{}, err
	}
	if !ok {
		// evaluated before its parent, or a parent that does not exist:
		// said, not skipped, so that the memory can still be written
		return Plan{}, fmt.Errorf("pair: revision %s (iteration %d): its parent_session %s has no evaluation (not evaluated yet, or no such session), so no %s memory; re-drive this evaluation (chronicle deadletter redrive) once the parent is evaluated",
			ev.SessionID, iteration, v.ParentSession, ImprovementTag)
	}
	if parent.Evaluation == nil {
		return Plan{}, nil // the parent met its criteria: nothing was improved
	}
	in, _, err := sessions.Input(w.Store, v.Key())
	if err != nil {
		return Plan{}, err
	}
	m := Improvement(scope, ev, iteration, in.Calls, *parent.Evaluation)
	minute, err := Minute(ev, iteration, *parent.Evaluation, m)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Improvement: &m, Minute: &minute, MinuteSession: v.ParentSession}, nil
}

// RetrieveNow runs PAIR retrieval for the session with key (scope "/" id)
// now, through Derive, from its evaluation event as the pairloop
// projection keeps it (EvaluationEvent), and publishes the context: the
// same event, with the same derived id, as the worker would write for that
// evaluation, so a later worker run finds the context in the projection
// and writes nothing. It returns false, writing nothing, when the
// projection holds no pending evaluation for the session (see
// EvaluationEvent). POST /v1/sessions/{id}/improve calls it when no pair
// worker runs.
func (w *Worker) RetrieveNow(ctx context.Context, key string) (bool, error) {
	env, ok, err := EvaluationEvent(w.Store, key)
	if err != nil || !ok {
		return false, err
	}
	out, err := w.Derive(ctx, &env)
	if err != nil || len(out) == 0 {
		return false, err
	}
	return true, w.Producer.PublishDerived(ctx, out...)
}
