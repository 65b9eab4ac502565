package treesearch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/projections"
)

// gate is the arithmetic evaluator under its own component name, asking a
// human about the first child of the root it scores 1 (the head of the
// open set after the first expansion).
type gate struct {
	game24.Arithmetic
	mu    sync.Mutex
	asked bool
}

func (*gate) Component() events.SearchComponent {
	return events.SearchComponent{Name: "test-gate", Version: "1"}
}

func (g *gate) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, err := g.Arithmetic.Evaluate(ctx, req)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(req.Path) == 1 && v.Score == 1 && !g.asked {
		g.asked, v.NeedsHuman = true, true
	}
	return v, err
}

// pausedGated starts search project:a/gated of the test-gate evaluator on
// a new pipeline and runs it to its pause (the human asked about the
// first child of the root).
func pausedGated(ctx context.Context, t *testing.T) (*pipeline.Pipeline, string) {
	t.Helper()
	p := start(t)
	r := runner(t, p, game24.Arithmetic{}, &gate{})
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: "gated", Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: game24.Config(5)})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := r.Run(ctx, key); !errors.Is(err, treesearch.ErrPaused) {
		t.Fatalf("want a pause: %v %+v", err, s)
	}
	return p, key
}

// gateWorker drives the searches of the test-gate evaluator with the
// arithmetic proposer and eval.
func gateWorker(p *pipeline.Pipeline, eval treesearch.Evaluator) *treesearch.ResumeWorker {
	return &treesearch.ResumeWorker{Store: p.Store, Producer: p.Producer, Components: func(pr, ev events.SearchComponent) (treesearch.Proposer, treesearch.Evaluator, bool) {
		return game24.Arithmetic{}, eval, ev.Name == "test-gate"
	}}
}

// approveGated publishes ana's approval of search key (project:a/gated)'s
// pause and returns it.
func approveGated(ctx context.Context, t *testing.T, p *pipeline.Pipeline, key string) events.Envelope {
	t.Helper()
	env, err := events.New(events.SearchResumed, "test/human", key+"/resumed", time.Now(), events.SearchResumedData{SearchID: "gated", Decision: "approve", By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	if err := p.Producer.Publish(ctx, env); err != nil {
		t.Fatal(err)
	}
	return env
}

// handleToTheEnd hands env to w, wants the search solved, then hands it
// again and wants nothing written (the search moved on: completed).
func handleToTheEnd(ctx context.Context, t *testing.T, w *treesearch.ResumeWorker, p *pipeline.Pipeline, key string, env events.Envelope) {
	t.Helper()
	if err := w.Handle(ctx, &env); err != nil {
		t.Fatal(err)
	}
	s, _, _ := treesearch.Get(p.Store, key)
	if s.Status != treesearch.StatusCompleted || s.Outcome != events.SearchSolved {
		t.Fatalf("after the worker: %+v; want completed, solved", s)
	}
	if err := w.Handle(ctx, &env); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := treesearch.Get(p.Store, key); again.Seq != s.Seq {
		t.Fatalf("a resume handed again once the search completed wrote %d events", again.Seq-s.Seq)
	}
}

// The resume worker leaves alone a search whose components it cannot
// build and a resume the search has moved on from (a redelivery), and
// drives an approved search it can build to completion.
func TestResumeWorkerOneDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p, key := pausedGated(ctx, t)
	env := approveGated(ctx, t, p, key)
	builtin := &treesearch.ResumeWorker{Store: p.Store, Producer: p.Producer, Components: game24.Builtin}
	if err := builtin.Handle(ctx, &env); err != nil {
		t.Fatal(err)
	}
	s, _, _ := treesearch.Get(p.Store, key)
	if s.Status != treesearch.StatusRunning || s.Current != nil || len(s.Decisions) != 1 {
		t.Fatalf("a search of component test-gate was driven by the built-in worker: %+v", s)
	}
	// driven to its end; redelivered, the search moved on since
	handleToTheEnd(ctx, t, gateWorker(p, game24.Arithmetic{}), p, key, env)
}

// Builtin builds only the components this build has, by name and version,
// the same one as proposer and evaluator.
func TestBuiltinComponents(t *testing.T) {
	a := game24.Arithmetic{}.Component()
	rec := (&game24.Recorded{}).Component()
	for _, c := range []struct {
		p, e events.SearchComponent
		ok   bool
	}{
		{a, a, true}, {rec, rec, true}, {a, rec, false},
		{events.SearchComponent{Name: a.Name, Version: "0"}, events.SearchComponent{Name: a.Name, Version: "0"}, false},
		{events.SearchComponent{Name: "game24-llm:gpt-4", Version: "1"}, events.SearchComponent{Name: "game24-llm:gpt-4", Version: "1"}, false},
	} {
		p, e, ok := game24.Builtin(c.p, c.e)
		if ok != c.ok || ok && (p.Component() != c.p || e.Component() != c.e) {
			t.Errorf("Builtin(%v, %v) = %v", c.p, c.e, ok)
		}
	}
}

// A rejection is driven as well: the rejected node is pruned and the
// worker goes on with the rest of the frontier to the end; a redelivered
// rejection finds the search moved on (its decision's Seq is no longer the
// search's) and writes nothing.
func TestResumeWorkerDrivesReject(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	r := runner(t, p, game24.Arithmetic{}, &gate{})
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: "gated-reject", Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: game24.Config(5)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, key)
	if !errors.Is(err, treesearch.ErrPaused) {
		t.Fatalf("want a pause: %v %+v", err, s)
	}
	paused := s.PausedAt
	env, err := events.New(events.SearchResumed, "test/human", key+"/rejected", time.Now(), events.SearchResumedData{SearchID: "gated-reject", Decision: "reject", By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	if err := p.Producer.Publish(ctx, env); err != nil {
		t.Fatal(err)
	}
	own := gateWorker(p, game24.Arithmetic{})
	if err := own.Handle(ctx, &env); err != nil {
		t.Fatal(err)
	}
	s, _, _ = treesearch.Get(p.Store, key)
	n, _, _ := treesearch.GetNode(p.Store, key, paused)
	if s.Status != treesearch.StatusCompleted || s.Outcome != events.SearchSolved || n.Status != treesearch.NodeRejected || len(s.Decisions) != 1 || s.Decisions[0].Seq >= s.Seq {
		t.Fatalf("after the worker: node %+v, search %+v", n, s)
	}
	if err := own.Handle(ctx, &env); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := treesearch.Get(p.Store, key); again.Seq != s.Seq {
		t.Fatalf("a redelivered rejection wrote %d events", again.Seq-s.Seq)
	}
}

// A resume that repeats one the projection applied (the routes derive the
// id from the search and the pause, so a retried or raced request has the
// same id and another time) is left alone at once, whatever its decision.
// Found by a new user's walkthrough: the worker waited ApplyTimeout (30 s)
// for each such repeat's decision, holding every other search's resume on
// its partition.
func TestResumeWorkerSkipsARepeatedResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p, key := pausedGated(ctx, t)
	resume := func(at time.Time, decision string) events.Envelope {
		env, err := events.New(events.SearchResumed, "test/human", key+"/resumed", at, events.SearchResumedData{SearchID: "gated", Decision: decision, By: "ana"})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		return env
	}
	first := resume(time.Now(), "approve")
	if err := p.Producer.Publish(ctx, first); err != nil {
		t.Fatal(err)
	}
	for {
		if s, _, _ := treesearch.Get(p.Store, key); len(s.Decisions) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the first resume was not applied")
		}
		time.Sleep(5 * time.Millisecond)
	}
	before, _, _ := treesearch.Get(p.Store, key)
	w := &treesearch.ResumeWorker{Store: p.Store, Producer: p.Producer, Components: game24.Builtin, ApplyTimeout: 20 * time.Second}
	for _, d := range []string{"approve", "reject"} {
		repeat := resume(time.Now().Add(time.Second), d)
		t0 := time.Now()
		if err := w.Handle(ctx, &repeat); err != nil {
			t.Fatalf("a repeated %s: %v", d, err)
		}
		if took := time.Since(t0); took > 5*time.Second {
			t.Fatalf("a repeated %s took %v: waited for a decision that never comes", d, took)
		}
	}
	if after, _, _ := treesearch.Get(p.Store, key); after.Seq != before.Seq {
		t.Fatalf("a repeated resume wrote %d events", after.Seq-before.Seq)
	}
}

// A resume the projection rejects (a search that was never started, here
// another tenant's made-up id) is left alone once the processor has gone
// past its record without applying it: before, the worker waited its
// ApplyTimeout (30 s) for a decision that never comes while every other
// search's resumes on the partition, any tenant's, waited behind it (a
// walkthrough, 2026-11-30: one such event held another tenant's approved
// search 30 s, two held it 59 s). Without the record's position (a caller
// other than the Runner) the wait is as before.
func TestResumeWorkerLeavesARejectedResumeAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p, key := pausedGated(ctx, t)
	topic := string(events.TopicSearches)
	part := events.Partition(topic, key, 1)
	next, ok := p.Store.NextOffset(treesearch.Name, topic, part)
	if !ok {
		t.Fatal("the processor has no offset on chronicle.searches")
	}
	bogus, err := events.New(events.SearchResumed, "test/b", "bogus-1", time.Now(), events.SearchResumedData{SearchID: "nope", Decision: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	bogus.Scope = "project:a" // the gated search's partition (one partition)
	if err := p.Producer.Publish(ctx, bogus); err != nil {
		t.Fatal(err)
	}
	for {
		if n, _ := p.Store.NextOffset(treesearch.Name, topic, part); n > next {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the processor did not go past the bogus resume")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w := &treesearch.ResumeWorker{Store: p.Store, Producer: p.Producer, Components: game24.Builtin, ApplyTimeout: 20 * time.Second}
	t0 := time.Now()
	if err := w.Handle(processors.WithRecordPosition(ctx, projections.Position{Topic: topic, Partition: part, Offset: next}), &bogus); err != nil {
		t.Fatalf("a rejected resume: %v; want it left alone", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("a rejected resume took %v: waited for a decision that never comes", took)
	}
	// without the position: the wait as before, bounded by ApplyTimeout
	w.ApplyTimeout = 300 * time.Millisecond
	if err := w.Handle(ctx, &bogus); err == nil {
		t.Fatal("without the record's position, a rejected resume is not told apart: want the timeout's error")
	}
}

// cutter is the arithmetic evaluator that cancels its drive's context at
// its n-th evaluation: the drive stops between steps, as a kill would.
type cutter struct {
	game24.Arithmetic
	n      int
	cancel context.CancelFunc
	mu     sync.Mutex
	calls  int
}

func (c *cutter) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	c.mu.Lock()
	if c.calls++; c.calls == c.n {
		c.cancel()
	}
	c.mu.Unlock()
	return c.Arithmetic.Evaluate(ctx, req)
}

// A resume handed again after its drive was cut (the process killed before
// the resume's offset was committed) drives the search on from the
// projection to its end, and a third delivery, of a completed search,
// writes nothing. Before, the second delivery found the search moved on
// and left it alone: running, with nobody to drive it, for good (a
// walkthrough, 2026-11-30: kill -9 of serve 75 ms after POST
// /v1/searches/{id}/resume, and every later resume was a 409 "running, not
// paused").
func TestResumeWorkerDrivesOnAfterACutDrive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p, key := pausedGated(ctx, t)
	env := approveGated(ctx, t, p, key)
	cutCtx, cut := context.WithCancel(ctx)
	if err := gateWorker(p, &cutter{n: 3, cancel: cut}).Handle(cutCtx, &env); err == nil {
		t.Fatal("the cut drive ended without an error")
	}
	s, _, _ := treesearch.Get(p.Store, key)
	if s.Status != treesearch.StatusRunning || s.Seq <= s.Decisions[len(s.Decisions)-1].Seq {
		t.Fatalf("after the cut drive: %+v; want running, moved on since the resume", s)
	}
	handleToTheEnd(ctx, t, gateWorker(p, game24.Arithmetic{}), p, key, env)
}
