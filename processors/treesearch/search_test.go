package treesearch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/projections"
)

// noEmbedder stands in for the memory-search embedder, which these tests
// never use (no memories are written).
type noEmbedder struct{}

func (noEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	return make([][]float32, len(texts)), nil
}
func (noEmbedder) Model() string { return "none" }
func (noEmbedder) Dim() int      { return 1 }

func start(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0",
		Processors: []processors.Processor{treesearch.Processor{}}, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func runner(t *testing.T, p *pipeline.Pipeline, prop treesearch.Proposer, ev treesearch.Evaluator) *treesearch.Runner {
	t.Helper()
	r, err := treesearch.NewRunner(p.Store, p.Producer, prop, ev)
	if err != nil {
		t.Fatal(err)
	}
	r.Stats = &treesearch.Stats{}
	return r
}

func search(t *testing.T, r *treesearch.Runner, scope, id, puzzle string, cfg events.SearchConfig) treesearch.Search {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: scope, SearchID: id, Goal: game24.Goal(puzzle), RootState: puzzle, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The built-in arithmetic search solves a puzzle end to end through the
// broker and the projection: the answer passes the objective check, the
// quota arithmetic is exact, and a replay of the log rebuilds the same
// projection.
func TestArithmeticSearchAndReplay(t *testing.T) {
	p := start(t)
	r := runner(t, p, game24.Arithmetic{}, game24.Arithmetic{})
	s := search(t, r, "project:a", "game24/901", "4 5 6 10", game24.Config(5))
	if s.Outcome != events.SearchSolved {
		t.Fatalf("outcome %q", s.Outcome)
	}
	expr, ok := game24.ParseAnswer(s.Answer)
	if !ok || game24.CheckAnswer("4 5 6 10", expr) != "" {
		t.Fatalf("answer %q", s.Answer)
	}
	if len(s.Path) != 5 || s.Path[0] != treesearch.RootID {
		t.Fatalf("path %v", s.Path)
	}
	q := s.Quota
	if q.Reserved != q.Used-q.Overrun+q.Refunded+q.Outstanding || q.Outstanding != 0 || q.Used == 0 {
		t.Fatalf("quota %+v", q)
	}
	if s.Counts.Duplicates == 0 || s.Counts.EvaluatorCalls != r.Stats.EvaluatorCalls {
		t.Fatalf("counts %+v, runner evaluator calls %d", s.Counts, r.Stats.EvaluatorCalls)
	}
	// the same id in another scope is another search
	other := search(t, r, "project:b", "game24/901", "1 2 4 7", game24.Config(5))
	if other.Goal == s.Goal || other.Outcome != events.SearchSolved {
		t.Fatalf("project:b search %+v", other)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: fresh, Processors: []processors.Processor{treesearch.Processor{}}}); err != nil {
		t.Fatal(err)
	}
	replayed, err := fresh.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if live.Projections[treesearch.Name] != replayed.Projections[treesearch.Name] || live.Projections[treesearch.Name] == "" {
		t.Fatalf("replay digest %s != live %s", replayed.Projections[treesearch.Name], live.Projections[treesearch.Name])
	}
}

// recorder wraps a proposer and an evaluator and keeps every prompt.
type recorder struct {
	treesearch.Proposer
	treesearch.Evaluator
	prompts []string
	evals   int
	byPath  map[string][]treesearch.EvalRequest // evaluations by the path they extend
}

func (r *recorder) Component() events.SearchComponent { return r.Proposer.Component() }
func (r *recorder) Propose(ctx context.Context, req treesearch.ProposeRequest) (treesearch.Proposal, error) {
	r.prompts = append(r.prompts, req.Prompt)
	return r.Proposer.Propose(ctx, req)
}
func (r *recorder) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	r.prompts = append(r.prompts, req.Prompt)
	r.evals++
	if r.byPath == nil {
		r.byPath = map[string][]treesearch.EvalRequest{}
	}
	k := req.Path[len(req.Path)-1].NodeID
	r.byPath[k] = append(r.byPath[k], req)
	return r.Evaluator.Evaluate(ctx, req)
}

// Goal pinning: every proposer and evaluator prompt starts with the
// objective. Isolation: siblings share no context. Dedup: candidates reaching a state already generated are
// killed without an evaluator call, so the evaluator is called exactly
// once per node that is neither a duplicate nor rejected by the checks.
func TestGoalPinningAndDedup(t *testing.T) {
	p := start(t)
	rec := &recorder{Proposer: game24.Arithmetic{}, Evaluator: game24.Arithmetic{}}
	r := runner(t, p, rec, rec)
	puzzle := "1 1 4 6" // repeated numbers: many equal states
	s := search(t, r, "project:a", "dedup", puzzle, game24.Config(3))
	want := "Primary Objective: " + game24.Goal(puzzle) + "\n"
	for _, pr := range rec.prompts {
		if !strings.HasPrefix(pr, want) {
			t.Fatalf("prompt does not start with the objective:\n%s", pr)
		}
	}
	nodes, _, err := treesearch.Nodes(p.Store, s.Key(), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	dups, scored := 0, 0
	for _, n := range nodes {
		if n.PrunedReason == events.PrunedDuplicate {
			dups++
			if n.Score != nil {
				t.Fatalf("duplicate %s was evaluated", n.ID)
			}
		}
		if n.Score != nil {
			scored++
		}
	}
	if dups == 0 || dups != s.Counts.Duplicates {
		t.Fatalf("%d duplicates, projection counts %d", dups, s.Counts.Duplicates)
	}
	if rec.evals != scored || rec.evals != s.Counts.EvaluatorCalls {
		t.Fatalf("evaluator called %d times for %d scored nodes (projection %d)", rec.evals, scored, s.Counts.EvaluatorCalls)
	}
	// the first expansion: 36 candidates from 1 1 4 6, and 1+4 = 4+1 etc. are one state
	closed, err := treesearch.ClosedSet(p.Store, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	if len(closed)+dups != len(nodes) {
		t.Fatalf("closed set %d + duplicates %d != nodes %d", len(closed), dups, len(nodes))
	}
	t.Logf("%d nodes, %d duplicates, %d evaluator calls", len(nodes), dups, rec.evals)

	// isolation: each candidate is judged on its own path and text only —
	// no sibling's text reaches its evaluator prompt
	for parent, reqs := range rec.byPath {
		for _, a := range reqs {
			if !strings.HasSuffix(a.Prompt, a.Candidate.Text) || strings.Count(a.Prompt, "Candidate next step:") != 1 {
				t.Fatalf("prompt for %q under %s:\n%s", a.Candidate.Text, parent, a.Prompt)
			}
			for _, b := range reqs {
				if b.Candidate.Text != a.Candidate.Text && strings.Contains(a.Prompt, b.Candidate.Text) {
					t.Fatalf("sibling %q leaked into the prompt of %q", b.Candidate.Text, a.Candidate.Text)
				}
			}
		}
	}
}

func TestPathSummaryStaysUnderBudget(t *testing.T) {
	tk, err := treesearch.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	if n := tk.Count("Primary Objective: obtain 24"); n < 4 || n > 10 {
		t.Fatalf("cl100k_base count %d", n)
	}
	var path []treesearch.Step
	path = append(path, treesearch.Step{NodeID: "r"})
	for i := 0; i < 400; i++ {
		path = append(path, treesearch.Step{Candidate: fmt.Sprintf("step %d: 4 + 5 = 9 (left: 6 9 10) because adding the two smallest numbers keeps options open\n", i)})
	}
	sum := treesearch.PathSummary(tk, path, treesearch.PathSummaryTokens)
	if n := tk.Count(sum); n >= treesearch.PathSummaryTokens || !strings.HasPrefix(sum, "step 0:") || !strings.Contains(sum, "step 399:") {
		t.Fatalf("summary of %d tokens:\n%.300s", n, sum)
	}
}

// pauser needs a human for the first candidate whose state leaves 20.
// It records a component name of its own: a search of built-in components
// is driven on by the pipeline's ResumeWorker after any decision, and this
// test's runner drives its search itself.
type pauser struct{ game24.Arithmetic }

func (pauser) Component() events.SearchComponent {
	return events.SearchComponent{Name: "test-pauser", Version: "1"}
}

func (p pauser) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, err := p.Arithmetic.Evaluate(ctx, req)
	if strings.Contains(req.Candidate.State, "20") {
		v.NeedsHuman, v.Report = true, "uses a product of 20: allowed?"
	}
	return v, err
}

// goalGate needs a human for every goal (a state of 24 alone): an
// evaluator that wants a person to accept any answer.
type goalGate struct{ game24.Arithmetic }

func (goalGate) Component() events.SearchComponent {
	return events.SearchComponent{Name: "test-goal-gate", Version: "1"}
}

func (g goalGate) Evaluate(ctx context.Context, req treesearch.EvalRequest) (treesearch.Verdict, error) {
	v, err := g.Arithmetic.Evaluate(ctx, req)
	if v.Goal {
		v.NeedsHuman, v.Report = true, "an answer: accept it?"
	}
	return v, err
}

// The runner pauses at a goal that needs a human, as at any node that
// needs one, and completes the search solved on it once approved (before,
// it completed the search at the goal and the human was never asked: a
// tree-search walkthrough, 2026-12-07).
func TestRunnerPausesAtAGoalThatNeedsAHuman(t *testing.T) {
	p := start(t)
	r := runner(t, p, game24.Arithmetic{}, goalGate{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: "goal-gate", Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: game24.Config(5)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, key)
	if !errors.Is(err, treesearch.ErrPaused) || s.Status != treesearch.StatusPaused || len(s.Open) == 0 || !s.Open[0].Goal || s.PausedAt != s.Open[0].ID {
		t.Fatalf("want a pause at a goal, got %v, %s %s, open %+v", err, s.Status, s.Outcome, s.Open)
	}
	goal := s.PausedAt
	env, _ := events.New(events.SearchResumed, "test/human", "resume-"+goal, time.Now(), events.SearchResumedData{SearchID: "goal-gate", Decision: "approve", By: "test"})
	env.Scope = "project:a"
	if err := p.Producer.Publish(ctx, env); err != nil {
		t.Fatal(err)
	}
	for s.Status == treesearch.StatusPaused {
		time.Sleep(5 * time.Millisecond)
		s, _, _ = treesearch.Get(p.Store, key)
	}
	if s, err = r.Run(ctx, key); err != nil {
		t.Fatal(err)
	}
	if s.Outcome != events.SearchSolved || s.GoalNode != goal || len(s.Decisions) != 1 || s.Decisions[0].NodeID != goal {
		t.Fatalf("after approving goal %s: %s at %s, decisions %+v", goal, s.Outcome, s.GoalNode, s.Decisions)
	}
}

// The runner pauses at a node that needs a human, the frontier stays
// saved, and after the human's decision (search.resumed.v1) it goes on to
// the end. A quota too small for the next reservation ends the search with
// quota_exhausted instead of breaching it.
func TestRunnerPausesAndQuota(t *testing.T) {
	p := start(t)
	r := runner(t, p, game24.Arithmetic{}, pauser{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:a", SearchID: "pause", Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: game24.Config(5)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(ctx, key)
	if !errors.Is(err, treesearch.ErrPaused) || s.Status != treesearch.StatusPaused || s.PausedAt == "" {
		t.Fatalf("want a pause, got %v, %+v", err, s)
	}
	for s.Status == treesearch.StatusPaused {
		env, _ := events.New(events.SearchResumed, "test/human", "resume-"+s.PausedAt, time.Now(), events.SearchResumedData{SearchID: "pause", Decision: "reject", By: "test"})
		env.Scope = "project:a"
		if err := p.Producer.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
		for s.Status == treesearch.StatusPaused {
			time.Sleep(5 * time.Millisecond)
			s, _, _ = treesearch.Get(p.Store, key)
		}
		if s, err = r.Run(ctx, key); err != nil && !errors.Is(err, treesearch.ErrPaused) {
			t.Fatal(err)
		}
	}
	if s.Outcome != events.SearchSolved || len(s.Decisions) == 0 || strings.Contains(s.Answer, "20") && strings.Contains(s.Answer, "4 * 5") {
		t.Fatalf("after the decisions: %s %q, %d decisions", s.Outcome, s.Answer, len(s.Decisions))
	}

	cfg := game24.Config(5)
	cfg.QuotaTokens = 3000
	q := search(t, runner(t, p, game24.Arithmetic{}, game24.Arithmetic{}), "project:a", "quota", "4 5 6 10", cfg)
	if q.Outcome != events.SearchQuotaExhausted || q.Quota.Used > cfg.QuotaTokens || q.Quota.Outstanding != 0 {
		t.Fatalf("quota search: %s, %+v", q.Outcome, q.Quota)
	}

	// Starting a held search again continues it when the setup is the
	// same, and is refused, naming the field, when it is not (before, a
	// run with another quota reported the first run's result as its own:
	// a walkthrough found).
	again := runner(t, p, game24.Arithmetic{}, game24.Arithmetic{})
	req := treesearch.StartRequest{Scope: "project:a", SearchID: "quota", Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: cfg}
	if k, err := again.Start(ctx, req); err != nil || k != events.EntityKey("project:a", "quota") {
		t.Fatalf("the same setup again: %q %v", k, err)
	}
	// the differing member is named, not the whole config twice
	req.Config.QuotaTokens = 1
	if _, err := again.Start(ctx, req); !errors.Is(err, treesearch.ErrSetupDiffers) || !strings.Contains(err.Error(), `has config.quota_tokens 3000, this run asks for 1`) || strings.Contains(err.Error(), "beam_width") {
		t.Fatalf("another quota: %v", err)
	}
	req.Config.QuotaTokens = 0 // omitted from the JSON
	if _, err := again.Start(ctx, req); !errors.Is(err, treesearch.ErrSetupDiffers) || !strings.Contains(err.Error(), `has config.quota_tokens 3000, this run asks for unset`) {
		t.Fatalf("no quota: %v", err)
	}
	req.Config = cfg
	req.Goal = "another goal"
	if _, err := again.Start(ctx, req); !errors.Is(err, treesearch.ErrSetupDiffers) || !strings.Contains(err.Error(), `has goal "`) || !strings.Contains(err.Error(), `asks for "another goal"`) {
		t.Fatalf("another goal: %v", err)
	}
	req.Goal = game24.Goal("4 5 6 10")
	req.Config = cfg
	if _, err := runner(t, p, game24.Arithmetic{}, pauser{}).Start(ctx, req); !errors.Is(err, treesearch.ErrSetupDiffers) || !strings.Contains(err.Error(), "has evaluator") {
		t.Fatalf("another evaluator: %v", err)
	}
}

// Importing GPT-4's Tree of Thoughts log as searches (a level-wise beam of
// 5, g = depth) expands at every level exactly the nodes ToT expanded.
func TestToTImportFollowsToT(t *testing.T) {
	p := start(t)
	r := runner(t, p, nil, nil)
	runs, err := game24.BundledToT()
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs[:10] {
		l, err := game24.NewToTLog(run)
		if err != nil {
			t.Fatal(err)
		}
		r.Proposer, r.Evaluator = l, l
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		key, err := r.Start(ctx, treesearch.StartRequest{Scope: "project:tot", SearchID: fmt.Sprintf("tot-%d", run.Idx+1), Goal: game24.Goal(l.Puzzle), RootState: "", Config: game24.ToTConfig(run)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(ctx, key)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		nodes, _, err := treesearch.Nodes(p.Store, s.Key(), 0, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range run.Steps {
			want := map[string]bool{}
			for _, y := range st.Ys {
				want[y] = true
			}
			got := map[string]bool{}
			for _, n := range nodes {
				if n.Depth == st.Step && n.Status == treesearch.NodeExpanded {
					got[n.State] = true
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("puzzle %d level %d: expanded %v, ToT expanded %v", run.Idx+1, st.Step, got, want)
			}
		}
	}
}

// A solved search's solver is locked (solver.locked.v1 recorded on the
// search); a solver whose config, components or prompts differ is refused,
// naming what differs; an unsolved search cannot be locked.
func TestSolverLock(t *testing.T) {
	p := start(t)
	r := runner(t, p, game24.Arithmetic{}, game24.Arithmetic{})
	s := search(t, r, "project:a", "lock-me", "4 5 6 10", game24.Config(5))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := r.Lock(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	after, _, _ := treesearch.Get(p.Store, s.Key())
	if len(after.Locks) != 1 || after.Locks[0] != l.LockSHA256 {
		t.Fatalf("locks %v, want %s", after.Locks, l.LockSHA256)
	}
	// locked again (a lost lock file): the same lock at once, nothing
	// written (it failed after the 30 s wait for a duplicate the projection
	// dropped: a walkthrough, 2026-11-30)
	r.ApplyTimeout = 2 * time.Second
	again, err := r.Lock(ctx, s.Key())
	if err != nil || again.LockSHA256 != l.LockSHA256 {
		t.Fatalf("locked again: %v, %s; want the same lock %s", err, again.LockSHA256, l.LockSHA256)
	}
	if after2, _, _ := treesearch.Get(p.Store, s.Key()); after2.Seq != after.Seq || len(after2.Locks) != 1 {
		t.Fatalf("locking again wrote: seq %d → %d, locks %v", after.Seq, after2.Seq, after2.Locks)
	}
	if err := treesearch.VerifyLock(l, treesearch.SolverLock("x", game24.Config(5), "", game24.Arithmetic{}, game24.Arithmetic{})); err != nil {
		t.Fatalf("the same solver refused: %v", err)
	}
	// another beam is named as the setting, not as config_sha256 alone (a
	// walkthrough); a lock without its config (before 2026-12-06) names
	// the hash as it did
	err = treesearch.VerifyLock(l, treesearch.SolverLock("x", game24.Config(3), "", game24.Arithmetic{}, game24.Arithmetic{}))
	if err == nil || !strings.Contains(err.Error(), "config.beam_width 3, locked 5") || strings.Contains(err.Error(), "config_sha256") {
		t.Fatalf("another beam: %v; want config.beam_width 3, locked 5", err)
	}
	old := l
	old.Config = nil
	err = treesearch.VerifyLock(old, treesearch.SolverLock("x", game24.Config(3), "", game24.Arithmetic{}, game24.Arithmetic{}))
	if err == nil || !strings.Contains(err.Error(), "config_sha256") {
		t.Fatalf("another beam against a lock without its config: %v", err)
	}
	// an edited config is an edited lock
	edited := l
	ec := *l.Config
	ec.BeamWidth = 9
	edited.Config = &ec
	if err := treesearch.CheckLock(edited); err == nil || !strings.Contains(err.Error(), "config_sha256 is not the SHA-256 of config") {
		t.Fatalf("a lock with an edited config: %v", err)
	}
	rec := &game24.Recorded{}
	err = treesearch.VerifyLock(l, treesearch.SolverLock("x", game24.Config(5), "", rec, rec))
	if err == nil || !strings.Contains(err.Error(), "proposer game24-recorded") {
		t.Fatalf("another proposer: %v", err)
	}
	llm := &game24.LLM{}
	err = treesearch.VerifyLock(l, treesearch.SolverLock("x", game24.Config(5), "", game24.Arithmetic{}, evaluatorWithPrompts{game24.Arithmetic{}, llm}))
	if err == nil || !strings.Contains(err.Error(), "prompts.evaluator.value") {
		t.Fatalf("other prompts: %v", err)
	}
	cfg := game24.Config(5)
	cfg.QuotaTokens = 100
	q := search(t, r, "project:a", "unsolved", "4 5 6 10", cfg)
	if _, err := r.Lock(ctx, q.Key()); err == nil {
		t.Fatal("an unsolved search was locked")
	}
}

// evaluatorWithPrompts is an evaluator that carries prompt templates.
type evaluatorWithPrompts struct {
	game24.Arithmetic
	p treesearch.PromptSet
}

func (e evaluatorWithPrompts) Prompts() map[string]string { return e.p.Prompts() }
