package pair_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// recordedReflections are the distinct reflections of the bundled
// Reflexion HotPotQA run with reflections (events/reflexion, the GPT
// model's own text, MIT licence next to the data), in log order. They are
// real recorded model output, but answers to Reflexion's reflection
// prompt, not to PAIR's revision prompt: the tests use them to prove the
// prompt is sent, the answer parsed and logged and never asked for again
// on replay, not to say anything of an answer's quality.
var recordedReflections = sync.OnceValues(func() ([]string, error) {
	run, err := reflexion.Bundled(reflexion.RunReflexion)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, tr := range run.Trials {
		for _, a := range tr.Agents {
			for _, r := range a.Reflections {
				if r = strings.TrimSpace(r); r != "" && !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
	}
	return out, nil
})

func reflections(t *testing.T) []string {
	t.Helper()
	rs, err := recordedReflections()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no reflection in the bundled run")
	}
	return rs
}

// Every recorded reflection that says what should have been done is read
// as a free-text revision: the rationale is the text, the decisions are
// its plan sentences, there is no estimate. The few that state a plan
// without a cue are unusable (the fallback), with the reason.
func TestParseRecordedReflections(t *testing.T) {
	rs := reflections(t)
	parsed, withCue := 0, 0
	for _, r := range rs {
		a, err := pair.ParseRevisionAnswer(r)
		cue := strings.Contains(strings.ToLower(r), "should have")
		if cue {
			withCue++
		}
		if err != nil {
			if cue {
				t.Fatalf("a reflection with 'should have' is unusable: %v\n%s", err, r)
			}
			if !strings.Contains(err.Error(), "no revised decision") {
				t.Fatalf("reason %q", err)
			}
			continue
		}
		parsed++
		if a.Format != pair.FormatText || a.Rationale != r || a.EstimatedImprovement != nil || len(a.MissingAssignments)+len(a.Rules) != 0 {
			t.Fatalf("free-text answer read as %+v", a)
		}
		for _, d := range a.RevisedDecisions {
			if !strings.Contains(r, d) {
				t.Fatalf("decision %q is not a sentence of the answer %q", d, r)
			}
		}
	}
	t.Logf("%d distinct recorded reflections: %d read as revisions (%d with 'should have'), %d fall back", len(rs), parsed, withCue, len(rs)-parsed)
	// one reflection of the log, checked sentence by sentence
	const r = "I assumed that the dates of the episodes' releases were the same as the dates of the episodes' airings, when in fact they were different. I should have searched for the air dates of the episodes instead of the release dates."
	a, err := pair.ParseRevisionAnswer("- " + r)
	if err != nil || len(a.RevisedDecisions) != 1 || a.RevisedDecisions[0] != "I should have searched for the air dates of the episodes instead of the release dates." {
		t.Fatalf("%+v %v", a, err)
	}
}

// The JSON form the prompt asks for. These strings are format fixtures for
// the parser, not model output (no recorded answer to PAIR's prompt
// exists): they pin which fields are read and which answers are rejected.
func TestParseJSONAnswerFormat(t *testing.T) {
	a, err := pair.ParseRevisionAnswer("```json\n{\"revised_decisions\": [\"a\", \"b\", \"a\"], \"missing_assignments\": \"c\", \"rules\": [], \"rationale\": \" r \", \"estimated_improvement\": \"12.5 points\", \"extra\": 1}\n```")
	if err != nil || a.Format != pair.FormatJSON || strings.Join(a.RevisedDecisions, "|") != "a|b" || strings.Join(a.MissingAssignments, "|") != "c" || a.Rationale != "r" || a.EstimatedImprovement == nil || *a.EstimatedImprovement != 12.5 {
		t.Fatalf("%+v %v", a, err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty answer"},
		{"  \n", "empty answer"},
		{`{"revised_decisions": ["a"], "estimated_improvement": 140}`, "/estimated_improvement: 140 is outside [0, 100]"},
		{`{"revised_decisions": {"a": 1}}`, "/revised_decisions: neither a list nor a string"},
		{`{"rationale": 3, "rules": ["x"]}`, "/rationale: not a string"},
		{`{"foo": "bar"}`, "no revised_decisions, missing_assignments, rules or rationale"},
		{`{"revised_decisions": [`, "does not decode"},
	} {
		if _, err := pair.ParseRevisionAnswer(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	// a plan heading takes the lines after it
	a, err = pair.ParseRevisionAnswer("The writes were missing.\nNew plan:\n- Look up the reservation.\n- Update the flights.\n\nDone.")
	if err != nil || strings.Join(a.RevisedDecisions, "|") != "Look up the reservation.|Update the flights." {
		t.Fatalf("%+v %v", a, err)
	}
}

// llmServer is an OpenAI-compatible chat-completions endpoint answering
// with answer (a recorded text) after failing the first failures requests
// with 500. It keeps the request bodies.
type llmServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []string
	calls    atomic.Int32
	failures int32
	answer   string
}

func newLLMServer(t *testing.T, answer string, failures int32) *llmServer {
	t.Helper()
	s := &llmServer{answer: answer, failures: failures}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.calls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, req.Messages[0].Content)
		s.mu.Unlock()
		if n <= s.failures {
			http.Error(w, "upstream overloaded", http.StatusInternalServerError)
			return
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": s.answer}}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

// llm is a client of the server with the production retry schedule (3
// attempts, waits of 1 s and 2 s), or with waits from 1 ms when fast.
func (s *llmServer) llm(t *testing.T, fast ...bool) *distill.LLM {
	t.Helper()
	cfg := distill.LLMConfig{URL: s.URL + "/v1", Model: "reflexion-gpt-recorded", APIKeyEnv: "PAIR_TEST_NO_KEY", RatePerSecond: 1000}
	if len(fast) > 0 && fast[0] {
		cfg.InitialBackoff = time.Millisecond
	}
	l, err := distill.NewLLM(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// revisionFixture is a failed tau-bench session projected by the sessions
// processor, its real PAIR context (retrieval over the memories of other
// sessions, USE lite) as the event the pair worker writes, applied to the
// pairloop projection.
type revisionFixture struct {
	h     *harness
	scope string
	ctx   events.Envelope
	c     pair.Context
	rec   []string // the recommendation texts of the deterministic revision
	task  string   // the session's task as the sessions projection holds it
	off   int64
}

func newRevisionFixture(t *testing.T) *revisionFixture {
	t.Helper()
	sc := getScenario(t)
	h := newHarness(t)
	for _, envs := range append(sc.others, sc.good) {
		h.send(envs...)
	}
	h.send(sc.failed...)
	evEnv, ev := h.eval(sc.failedID)
	scope := sc.failed[0].EffectiveScope()
	p, err := h.w.Plan(context.Background(), scope, ev)
	if err != nil || p.Context == nil {
		t.Fatalf("plan: %+v %v", p, err)
	}
	ce, err := events.Derive(evEnv, pair.Source, pair.ContextRetrieved, 0, p.Context)
	if err != nil {
		t.Fatal(err)
	}
	in, ok, err := sessions.Input(h.store, events.EntityKey(scope, sc.failedID))
	if err != nil || !ok || in.Task == "" {
		t.Fatalf("session input: %v %v", ok, err)
	}
	f := &revisionFixture{h: h, scope: scope, ctx: ce, c: *p.Context, task: in.Task}
	for _, r := range pair.Revise(*p.Context).Recommendations {
		f.rec = append(f.rec, r.Text)
	}
	f.applyLoop(t, h.store, ce)
	return f
}

func (f *revisionFixture) applyLoop(t *testing.T, s *projections.Store, env events.Envelope) {
	t.Helper()
	if _, err := s.Apply(pair.LoopName, projections.Position{Topic: string(events.TopicLearned), Offset: f.off}, &env, pair.Loop{}.Apply); err != nil {
		t.Fatal(err)
	}
	f.off++
}

func (f *revisionFixture) state(t *testing.T, s *projections.Store) pair.LoopState {
	t.Helper()
	st, ok, err := pair.GetLoop(s, events.EntityKey(f.scope, f.c.SessionID))
	if err != nil || !ok {
		t.Fatalf("loop state: %v %v", ok, err)
	}
	return st
}

// The LLM informed revision against a local OpenAI-compatible server that
// answers with a recorded reflection: the prompt carries the session, the
// gaps and the recommendation texts; the answer is logged in
// pair.revision.written.v1 (id derived from the context) and read by the
// pairloop processor as a free-text revision next to the deterministic
// one; a second run asks nothing; a replay of the events into an empty
// store with the server gone gives the same projection.
func TestRevisionWorkerWithRecordedAnswer(t *testing.T) {
	var answer string
	for _, r := range reflections(t) {
		if strings.Contains(r, "I should have") {
			answer = r
			break
		}
	}
	srv := newLLMServer(t, answer, 0)
	f := newRevisionFixture(t)
	before := f.state(t, f.h.store)
	w := &pair.RevisionWorker{Store: f.h.store, LLM: srv.llm(t)}
	out, err := w.Derive(context.Background(), &f.ctx)
	if err != nil || out == nil {
		t.Fatalf("derive: %v %v", out, err)
	}
	if srv.calls.Load() != 1 {
		t.Fatalf("%d calls", srv.calls.Load())
	}
	prompt := srv.bodies[0]
	if !strings.HasPrefix(prompt, "You are a fresh agent reviewing a coordination session") || !strings.Contains(prompt, "Task: "+strings.SplitN(f.task, "\n", 2)[0]) || !strings.Contains(prompt, "[assistant] ") {
		t.Fatalf("prompt does not show the session:\n%s", prompt)
	}
	for _, g := range f.c.Gaps {
		if !strings.Contains(prompt, g.CriterionID) || g.Description != "" && !strings.Contains(prompt, g.Description) {
			t.Fatalf("prompt lacks gap %s %q", g.CriterionID, g.Description)
		}
	}
	if len(f.rec) == 0 {
		t.Fatal("no recommendation")
	}
	for _, r := range f.rec {
		if !strings.Contains(prompt, r) {
			t.Fatalf("prompt lacks the recommendation %q", r)
		}
	}
	if !strings.Contains(strings.Join(f.rec, "\n"), "Based on ") {
		t.Fatalf("no gap with patterns: %v", f.rec)
	}
	// the event: derived id, the answer verbatim, on the session's key
	if out.Type != pair.RevisionWritten || out.ID != events.DerivedIDIn(f.ctx.Scope, f.ctx.Source, f.ctx.ID, pair.RevisionWritten, 0) || out.CausationID != f.ctx.ID || out.Time != f.ctx.Time {
		t.Fatalf("event %+v", out)
	}
	if k, err := events.Key(out); err != nil || k != events.EntityKey(f.scope, f.c.SessionID) {
		t.Fatalf("key %q %v", k, err)
	}
	var d pair.RevisionWrittenData
	if err := out.Decode(&d); err != nil || d.Answer == nil || *d.Answer != answer || d.Error != "" || d.Prompt != prompt || d.Model != "reflexion-gpt-recorded" || d.ContextID != f.ctx.ID {
		t.Fatalf("data %+v %v", d, err)
	}
	f.applyLoop(t, f.h.store, *out)
	st := f.state(t, f.h.store)
	lr := st.LLMRevision
	if lr == nil || lr.Source != pair.SourceLLM || lr.Format != pair.FormatText || lr.Model != "reflexion-gpt-recorded" || lr.Rationale != answer || len(lr.RevisedDecisions) == 0 || lr.EstimatedImprovement != nil || lr.EventID != out.ID {
		t.Fatalf("llm revision %+v", lr)
	}
	// next to the deterministic revision, which is unchanged, as the status
	if b1, _ := json.Marshal(before.Revision); string(b1) != string(mustJSON(t, st.Revision)) || st.Status != before.Status {
		t.Fatal("the LLM revision changed the deterministic revision or the status")
	}
	// a second run (redelivery) asks the model nothing
	if again, err := w.Derive(context.Background(), &f.ctx); err != nil || again != nil || srv.calls.Load() != 1 {
		t.Fatalf("second run: %v %v, %d calls", again, err, srv.calls.Load())
	}
	// replay: the same events into an empty store, the server gone
	srv.Close()
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	f.off = 0
	f.applyLoop(t, rep, f.ctx)
	f.applyLoop(t, rep, *out)
	live, _ := f.h.store.Digest()
	rd, _ := rep.Digest()
	if rd.Projections[pair.LoopName] != live.Projections[pair.LoopName] {
		t.Fatalf("replay %s, live %s", rd.Projections[pair.LoopName], live.Projections[pair.LoopName])
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fallbacks: a server that answers 500 is tried 3 times with waits of
// 1 s and 2 s, then the failure is logged and the deterministic revision
// stands with the reason; the same for a server that is down (3 attempts,
// short waits); a recorded
// reflection that states no decision is logged and falls back too.
func TestRevisionWorkerFallbacks(t *testing.T) {
	f := newRevisionFixture(t)
	run := func(w *pair.RevisionWorker) pair.LLMRevision {
		t.Helper()
		out, err := w.Derive(context.Background(), &f.ctx)
		if err != nil || out == nil {
			t.Fatalf("derive: %v %v", out, err)
		}
		var d pair.RevisionWrittenData
		_ = out.Decode(&d)
		return pair.InterpretRevision(out, d)
	}

	srv := newLLMServer(t, reflections(t)[0], 5)
	start := time.Now()
	r := run(&pair.RevisionWorker{Store: f.h.store, LLM: srv.llm(t)})
	if el := time.Since(start); srv.calls.Load() != 3 || el < 3*time.Second {
		t.Fatalf("%d calls in %v, want 3 after waits of 1 s and 2 s", srv.calls.Load(), el)
	}
	if r.Source != pair.SourceDeterministic || !strings.Contains(r.FallbackReason, "model call failed") || !strings.Contains(r.FallbackReason, "after 3 attempts") || !strings.Contains(r.FallbackReason, "500") {
		t.Fatalf("500s: %+v", r)
	}

	down := newLLMServer(t, "", 0)
	l := down.llm(t, true) // the schedule is shown above
	down.Close()
	r = run(&pair.RevisionWorker{Store: f.h.store, LLM: l})
	if r.Source != pair.SourceDeterministic || !strings.Contains(r.FallbackReason, "model call failed") || !strings.Contains(r.FallbackReason, "after 3 attempts") || !strings.Contains(r.FallbackReason, "connect") {
		t.Fatalf("server down: %+v", r)
	}

	// a server that never answers: the call ends at the worker's Timeout
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	hl, err := distill.NewLLM(distill.LLMConfig{URL: hang.URL, Model: "reflexion-gpt-recorded", APIKeyEnv: "PAIR_TEST_NO_KEY", RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r = run(&pair.RevisionWorker{Store: f.h.store, LLM: hl, Timeout: 300 * time.Millisecond})
	close(release)
	hang.Close()
	if el := time.Since(start); r.Source != pair.SourceDeterministic || !strings.Contains(r.FallbackReason, "deadline exceeded") || el > 5*time.Second {
		t.Fatalf("hanging server, %v: %+v", el, r)
	}

	var planless string
	for _, x := range reflections(t) {
		if _, err := pair.ParseRevisionAnswer(x); err != nil {
			planless = x
			break
		}
	}
	if planless == "" {
		t.Fatal("every recorded reflection parses: no real unusable answer to test with")
	}
	srv = newLLMServer(t, planless, 0)
	out, err := (&pair.RevisionWorker{Store: f.h.store, LLM: srv.llm(t)}).Derive(context.Background(), &f.ctx)
	if err != nil || out == nil {
		t.Fatal(out, err)
	}
	f.applyLoop(t, f.h.store, *out)
	st := f.state(t, f.h.store)
	if st.LLMRevision == nil || st.LLMRevision.Source != pair.SourceDeterministic || !strings.HasPrefix(st.LLMRevision.FallbackReason, "answer unusable: free-text answer states no revised decision") || st.Revision == nil || st.Revision.Rationale == "" {
		t.Fatalf("unusable answer: %+v", st.LLMRevision)
	}

	// a context that stops the loop asks for no revision
	stop := f.c
	stop.Recommendation, stop.NextIteration, stop.Iteration = pair.StopIterationLimit, 0, 3
	se, err := events.Derive(&f.ctx, pair.Source, pair.ContextRetrieved, 1, stop)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := (&pair.RevisionWorker{Store: f.h.store, LLM: srv.llm(t)}).Derive(context.Background(), &se); err != nil || out != nil {
		t.Fatalf("stop_iteration_limit: %v %v", out, err)
	}
}

// bigAnswer answers every prompt with a text of n bytes.
type bigAnswer int

func (n bigAnswer) Complete(context.Context, string) (string, error) {
	return "I should have called the refund tool. " + strings.Repeat("z", int(n)), nil
}
func (bigAnswer) Model() string { return "big" }

// An answer too large for one event is written as the call's error, so
// the event is produced and the deterministic revision stands with the
// reason. Before, the event carried the 2 MB answer, PublishDerived
// refused it and the context was dead-lettered: no revision event at
// all, llm_revision null, nothing saying why.
func TestRevisionWorkerAnswerTooLarge(t *testing.T) {
	f := newRevisionFixture(t)
	// an answer within the limit is kept
	small, err := (&pair.RevisionWorker{Store: f.h.store, LLM: bigAnswer(1000)}).Derive(context.Background(), &f.ctx)
	var d pair.RevisionWrittenData
	if err != nil || small == nil || small.Decode(&d) != nil || d.Answer == nil || d.Error != "" {
		t.Fatalf("small answer %+v %v", d, err)
	}
	out, err := (&pair.RevisionWorker{Store: f.h.store, LLM: bigAnswer(2 << 20)}).Derive(context.Background(), &f.ctx)
	if err != nil || out == nil {
		t.Fatalf("derive: %v %v", out, err)
	}
	raw, err := out.MarshalJSON()
	if err != nil || len(raw) > events.MaxEventBytes {
		t.Fatalf("event of %d bytes, above the limit %d (%v)", len(raw), events.MaxEventBytes, err)
	}
	d = pair.RevisionWrittenData{}
	if err := out.Decode(&d); err != nil || d.Answer != nil || !strings.Contains(d.Error, "above the 983040-byte limit") || !strings.HasPrefix(d.Error, "model big: answer of ") {
		t.Fatalf("data %+v %v", d, err)
	}
	f.applyLoop(t, f.h.store, *out)
	if st := f.state(t, f.h.store); st.LLMRevision == nil || st.LLMRevision.Source != pair.SourceDeterministic || !strings.Contains(st.LLMRevision.FallbackReason, "not kept") {
		t.Fatalf("llm revision %+v", st.LLMRevision)
	}
}
