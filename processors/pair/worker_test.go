package pair_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// The worker's decisions (Plan) on real tau-bench sessions run through the
// sessions processor and the memory bank on a real store, with the real
// index and USE lite. Plan publishes nothing and builds no event, so these
// tests run before pair.context.retrieved.v1 is in the events registry.
func TestWorkerPlan(t *testing.T) {
	sc := getScenario(t)
	h := newHarness(t)
	ctx := context.Background()
	for _, envs := range append(sc.others, sc.good) {
		h.send(envs...)
	}
	h.send(sc.failed...)
	scope := sc.failed[0].EffectiveScope()

	// a successful session without a parent: nothing
	_, goodEv := h.eval(sc.goodID)
	if p, err := h.w.Plan(ctx, scope, goodEv); err != nil || p.Context != nil || p.Improvement != nil {
		t.Fatalf("success without parent: %+v %v", p, err)
	}
	// a later revision at 95 or above: nothing; below it, a context as
	// at completion (Derive writes one per session). Before, every later
	// revision was skipped, so a session a late tool call took below 95
	// never got one (a re-test, 2026-12-01)
	_, failedEv := h.eval(sc.failedID)
	rev := failedEv
	rev.Revision = 1
	if p, err := h.w.Plan(ctx, scope, rev); err != nil || p.Context == nil || p.Improvement != nil {
		t.Fatalf("revision 1 below 95: %+v %v; want a context", p, err)
	}
	passed := rev
	passed.Composite, passed.Recommendation = 100, events.MeetsCriteria
	if p, err := h.w.Plan(ctx, scope, passed); err != nil || p.Context != nil || p.Improvement != nil {
		t.Fatalf("revision 1 at 100: %+v %v; want nothing", p, err)
	}
	// an unknown session is an error (the evaluation is dead-lettered)
	unknown := failedEv
	unknown.SessionID = "never-seen"
	if _, err := h.w.Plan(ctx, scope, unknown); err == nil || !strings.Contains(err.Error(), "never-seen") {
		t.Fatalf("unknown session: %v", err)
	}

	// the failed trial: a context whose patterns include the successful
	// trial's strategy, with its success rate from the sessions projection
	p, err := h.w.Plan(ctx, scope, failedEv)
	if err != nil || p.Context == nil || p.Improvement != nil {
		t.Fatalf("failed session: %+v %v", p, err)
	}
	c := p.Context
	if c.SessionID != sc.failedID || c.Iteration != 1 || c.NextIteration != 2 || c.Recommendation != pair.ReviseWithPatterns || c.Composite != failedEv.Composite {
		t.Fatalf("context %+v", c)
	}
	if len(c.Gaps) == 0 || len(c.Gaps) != len(pair.WeightedGaps(failedEv)) {
		t.Fatalf("context has %d gaps, the evaluation %d weighted", len(c.Gaps), len(pair.WeightedGaps(failedEv)))
	}
	goodMem := memoriesOf(t, h.store, sc.goodID)
	if len(goodMem) != 1 || goodMem[0].Outcome != "success" {
		t.Fatalf("the successful trial's memories: %+v", goodMem)
	}
	own := map[string]bool{}
	for _, m := range memoriesOf(t, h.store, sc.failedID) {
		own[m.ID] = true
	}
	found := false
	for _, g := range c.Gaps {
		if !strings.HasPrefix(g.Query, pair.QueryPrefix) {
			t.Fatalf("gap query %q", g.Query)
		}
		for _, grp := range g.Patterns {
			if len(grp.Examples) == 0 || len(grp.Examples) > pair.MaxExamples {
				t.Fatalf("group %s has %d examples", grp.Category, len(grp.Examples))
			}
			for _, e := range grp.Examples {
				if own[e.MemoryID] || e.Confidence <= pair.MinConfidence || e.Kind != pair.KindPattern {
					t.Fatalf("example %+v (own memory, low confidence or not a strategy)", e)
				}
				if e.SuccessRate == nil || *e.SuccessRate != 1 || e.Sessions != 1 {
					t.Fatalf("example %s: success rate %v over %d sessions, want 1 over 1", e.MemoryID, e.SuccessRate, e.Sessions)
				}
				if e.MemoryID == goodMem[0].ID {
					found = true
					if grp.Category != pair.Category(goodMem[0].Tags) {
						t.Fatalf("category %q, tags %v", grp.Category, goodMem[0].Tags)
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("the successful trial's strategy %s is in no gap's patterns: %+v", goodMem[0].ID, c.Gaps)
	}

	// a copy of the successful trial merges into its strategy memory; an
	// evaluation of the copy never sees that memory (ExcludeSourceSession)
	copyID := "pair-test/copy"
	h.send(rekey(t, sc.good, copyID, 1, "")...)
	if m := memoriesOf(t, h.store, copyID); len(m) != 1 || m[0].ID != goodMem[0].ID {
		t.Fatalf("the copy's strategy did not merge: %+v", m)
	}
	fake := failedEv
	fake.SessionID = copyID
	p, err = h.w.Plan(ctx, scope, fake)
	if err != nil || p.Context == nil {
		t.Fatalf("copy: %+v %v", p, err)
	}
	for _, g := range p.Context.Gaps {
		for _, grp := range g.Patterns {
			for _, e := range grp.Examples {
				if e.MemoryID == goodMem[0].ID {
					t.Fatalf("retrieval for %s saw a memory distilled from it", copyID)
				}
			}
		}
	}

	// scopes: an explicit pattern in another project is invisible by
	// default and visible when Readable allows it
	other := events.MemoryRecordedData{Title: "Handoff pattern", Description: "Cancel after confirming.", Content: "Coordination pattern: " + failedEv.Gaps[0].Description,
		Outcome: "success", Tags: []string{pair.PatternTag, "handoff"}, Source: "explicit"}
	other.MemoryID = distill.MemoryID("project:other", other.Title, other.Content)
	env, err := events.New(events.MemoryRecorded, "test", "explicit-1", taubench.BaseTime, other)
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:other"
	h.record(env)
	seen := func(p pair.Plan) bool {
		for _, g := range p.Context.Gaps {
			for _, grp := range g.Patterns {
				for _, e := range grp.Examples {
					if e.MemoryID == other.MemoryID {
						return grp.Category == "handoff" && e.SuccessRate == nil && e.Confidence == distill.InitialExplicit
					}
				}
			}
		}
		return false
	}
	if p, err := h.w.Plan(ctx, scope, failedEv); err != nil || seen(p) {
		t.Fatalf("another project's memory was retrieved (err %v)", err)
	}
	wide := &pair.Worker{Store: h.store, Index: h.ix, Readable: func(string, string) bool { return true }}
	if p, err := wide.Plan(ctx, scope, failedEv); err != nil || !seen(p) {
		t.Fatalf("Readable allowing every scope: explicit memory not retrieved as expected (err %v)", err)
	}

	// iteration 2: the successful trial as the revision of the failed one
	r2 := "pair-test/revision-2"
	h.send(rekey(t, sc.good, r2, 2, sc.failedID)...)
	v, _, _ := sessions.Get(h.store, events.EntityKey(scope, r2))
	if v.Iteration != 2 || v.ParentSession != sc.failedID {
		t.Fatalf("revision projected as %+v", v.Session)
	}
	_, r2Ev := h.eval(r2)
	p, err = h.w.Plan(ctx, scope, r2Ev)
	if err != nil || p.Context != nil || p.Improvement == nil {
		t.Fatalf("improved revision: %+v %v", p, err)
	}
	m := p.Improvement
	if m.SourceSession != r2 || m.Source != "distilled" || m.Outcome != "success" || m.Tags[0] != pair.ImprovementTag || !strings.HasPrefix(m.Title, "PAIR improvement: ") {
		t.Fatalf("improvement memory %+v", m)
	}
	if len(pair.FixedGaps(failedEv, r2Ev)) == 0 || !strings.Contains(m.Content, pair.FixedGaps(failedEv, r2Ev)[0].Description) {
		t.Fatalf("improvement content %q", m.Content)
	}

	// iteration 3: the failed trial again, as the last attempt: stop
	r3 := "pair-test/revision-3"
	h.send(rekey(t, sc.failed, r3, 3, r2)...)
	_, r3Ev := h.eval(r3)
	p, err = h.w.Plan(ctx, scope, r3Ev)
	if err != nil || p.Context == nil {
		t.Fatalf("iteration 3: %+v %v", p, err)
	}
	if c := p.Context; c.Recommendation != pair.StopIterationLimit || c.Iteration != 3 || c.ParentSession != r2 || c.NextIteration != 0 || len(c.Gaps) == 0 {
		t.Fatalf("iteration 3 context %+v", c)
	}
	for _, g := range p.Context.Gaps {
		if len(g.Patterns) != 0 || g.Query != "" {
			t.Fatalf("iteration 3 retrieved for gap %+v", g)
		}
	}
	// a success at iteration 3 whose parent met its criteria: no memory
	r4 := "pair-test/revision-4"
	h.send(rekey(t, sc.good, r4, 3, r2)...)
	_, r4Ev := h.eval(r4)
	if p, err := h.w.Plan(ctx, scope, r4Ev); err != nil || p.Context != nil || p.Improvement != nil {
		t.Fatalf("success after a successful parent: %+v %v", p, err)
	}
}

// On a cluster a revision's parent may be projected by another instance:
// the worker finds the parent's evaluation in the outcomes table (a global
// table every instance feeds from chronicle.evaluations), not in its own
// sessions projection. Instance A projects the failed parent, instance B
// the successful revision; B's worker writes the improvement memory. When
// B's table has not read the parent's evaluation yet, the worker waits for
// it once (Fresh), and a wait that fails is an error naming the table.
func TestWorkerReadsOutcomesOfOtherInstances(t *testing.T) {
	sc := getScenario(t)
	a, b := newHarness(t), newHarness(t)
	ctx := context.Background()
	a.send(sc.failed...)
	parentEnv, parentEv := a.eval(sc.failedID)
	scope := sc.failed[0].EffectiveScope()
	r2 := "pair-test/revision-on-b"
	b.send(rekey(t, sc.good, r2, 2, sc.failedID)...)
	if _, ok, _ := sessions.Get(b.store, events.EntityKey(scope, sc.failedID)); ok {
		t.Fatal("the parent is in B's sessions projection: the test would not show a cross-instance read")
	}
	_, r2Ev := b.eval(r2)

	// B's table has not read the parent's evaluation, and nothing waits:
	// an error naming the parent (the evaluation is dead-lettered, to be
	// re-driven), not a silent skip
	if _, err := b.w.Plan(ctx, scope, r2Ev); err == nil || !strings.Contains(err.Error(), "parent_session "+sc.failedID+" has no evaluation") {
		t.Fatalf("without the parent's outcome: %v", err)
	}
	// a wait that fails names the table and is an error (a dead letter)
	b.w.Fresh = func(ctx context.Context) error { return context.DeadlineExceeded }
	if _, err := b.w.Plan(ctx, scope, r2Ev); err == nil || !strings.Contains(err.Error(), "outcomes table has not caught up") {
		t.Fatalf("failed wait: %v", err)
	}
	// the wait brings the parent's evaluation (as the global table runner
	// would) and the worker reads again: the improvement memory
	waits := 0
	b.w.Fresh = func(ctx context.Context) error {
		waits++
		b.apply(pair.OutcomesName, events.TopicEvaluations, parentEnv, pair.Outcomes{}.Apply)
		return nil
	}
	p, err := b.w.Plan(ctx, scope, r2Ev)
	if err != nil || p.Improvement == nil || p.MinuteSession != sc.failedID {
		t.Fatalf("with the parent's outcome: %+v %v", p, err)
	}
	if waits != 1 {
		t.Fatalf("Fresh called %d times, want 1", waits)
	}
	fixed := pair.FixedGaps(parentEv, r2Ev)
	if len(fixed) == 0 || !strings.Contains(p.Improvement.Content, fixed[0].Description) {
		t.Fatalf("improvement content %q, fixed gaps %+v", p.Improvement.Content, fixed)
	}
	// the same memory as on a single instance that projects both sessions
	one := newHarness(t)
	one.send(sc.failed...)
	one.send(rekey(t, sc.good, r2, 2, sc.failedID)...)
	_, oneEv := one.eval(r2)
	want, err := one.w.Plan(ctx, scope, oneEv)
	if err != nil || want.Improvement == nil {
		t.Fatalf("single instance: %+v %v", want, err)
	}
	if !reflect.DeepEqual(want.Improvement, p.Improvement) || !reflect.DeepEqual(want.Minute, p.Minute) {
		t.Fatalf("cluster memory %+v\nsingle instance %+v", p.Improvement, want.Improvement)
	}
	// a parent that met its criteria (its row has no evaluation): no memory
	b.w.Fresh = nil
	goodEnv, _ := a.eval(sc.failedID) // reuse the envelope, rewritten as passing
	passing := *goodEnv
	var ev events.EvaluationData
	if err := passing.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	ev.Composite, ev.Recommendation, ev.Revision = 100, events.MeetsCriteria, 1
	raw, _ := json.Marshal(ev)
	passing.Data, passing.ID = raw, "judge-rescore-1"
	b.apply(pair.OutcomesName, events.TopicEvaluations, &passing, pair.Outcomes{}.Apply)
	if o, ok, err := pair.GetOutcome(b.store, events.EntityKey(scope, sc.failedID)); err != nil || !ok || o.Evaluation != nil || o.Revision != 1 {
		t.Fatalf("passing outcome %+v %v %v", o, ok, err)
	}
	if p, err := b.w.Plan(ctx, scope, r2Ev); err != nil || p.Improvement != nil {
		t.Fatalf("after a passing parent: %+v %v", p, err)
	}
	// a lower revision never replaces a higher one
	late := *parentEnv
	late.ID = "late-revision-0"
	b.apply(pair.OutcomesName, events.TopicEvaluations, &late, pair.Outcomes{}.Apply)
	if o, _, _ := pair.GetOutcome(b.store, events.EntityKey(scope, sc.failedID)); o.Revision != 1 || o.Recommendation != events.MeetsCriteria {
		t.Fatalf("revision 0 replaced revision 1: %+v", o)
	}
}

// recordingSearcher records the queries it passes on.
type recordingSearcher struct {
	pair.Searcher
	queries []search.Query
}

func (r *recordingSearcher) Search(ctx context.Context, q search.Query) (search.Result, error) {
	r.queries = append(r.queries, q)
	return r.Searcher.Search(ctx, q)
}

// PAIR's searches name the scopes they read (the session's own) as
// ReadScopes, so the index caches their query vectors only for searchers
// of that scope (search.Query.ReadScopes, tenant-isolation review); with
// a Readable of the worker's, whose scopes no list names, they name none
// and are not cached.
func TestWorkerSearchesNameTheirReadScopes(t *testing.T) {
	sc := getScenario(t)
	h := newHarness(t)
	ctx := context.Background()
	for _, envs := range append(sc.others, sc.good) {
		h.send(envs...)
	}
	h.send(sc.failed...)
	scope := sc.failed[0].EffectiveScope()
	_, failedEv := h.eval(sc.failedID)
	rec := &recordingSearcher{Searcher: h.ix}
	w := &pair.Worker{Store: h.store, Index: rec}
	if _, err := w.Plan(ctx, scope, failedEv); err != nil {
		t.Fatal(err)
	}
	if len(rec.queries) == 0 {
		t.Fatal("Plan ran no search")
	}
	for _, q := range rec.queries {
		if !reflect.DeepEqual(q.ReadScopes, []string{scope}) || q.Readable == nil || !q.Readable(scope) || q.Readable("project:other") {
			t.Fatalf("query %q: ReadScopes %v, want [%s] with a Readable of that scope only", q.Text, q.ReadScopes, scope)
		}
	}
	rec.queries = nil
	w.Readable = func(string, string) bool { return true }
	if _, err := w.Plan(ctx, scope, failedEv); err != nil {
		t.Fatal(err)
	}
	for _, q := range rec.queries {
		if q.ReadScopes != nil {
			t.Fatalf("with the worker's Readable: query %q has ReadScopes %v, want none", q.Text, q.ReadScopes)
		}
	}
}

// downSearcher answers every search as a vector store that is away does.
type downSearcher struct{ err error }

func (d downSearcher) Search(context.Context, search.Query) (search.Result, error) {
	return search.Result{}, d.err
}

// The vector store's being away is a failure waiting cures: Handle wraps
// it in processors.ErrRetryLater, so the runner hands the evaluation again
// instead of dead-lettering it; any other failure stays poisonous. Before,
// every evaluation of a Weaviate outage was dead-lettered for good, and
// POST …/improve answered 409 even after Weaviate was back (a
// walkthrough, 2026-11-30).
func TestWorkerRetriesWhileTheStoreIsAway(t *testing.T) {
	sc := getScenario(t)
	h := newHarness(t)
	for _, envs := range append(sc.others, sc.good) {
		h.send(envs...)
	}
	h.send(sc.failed...)
	env, _ := h.eval(sc.failedID)
	for _, c := range []struct {
		err   error
		later bool
	}{
		{fmt.Errorf("weaviate: nearVector: server unavailable: %w", search.ErrStoreUnavailable), true},
		{fmt.Errorf("%w (20s): waiting", search.ErrTimeout), true},
		{fmt.Errorf("weaviate: collection Memory was gone: %w", search.ErrStoreReset), true},
		{errors.New("search: query: invalid"), false},
	} {
		w := &pair.Worker{Store: h.store, Index: downSearcher{c.err}}
		err := w.Handle(context.Background(), env)
		if err == nil || errors.Is(err, processors.ErrRetryLater) != c.later {
			t.Errorf("%v: Handle %v; want an error, handed again: %v", c.err, err, c.later)
		}
	}
}
