package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// POST /v1/sessions/{id}/improve on a server without a pair worker (the
// test pipeline runs none): the session is evaluated below 95 and has no
// context, so the route runs PAIR retrieval itself and answers 200 with
// the revision and next_attempt. The context it wrote is the one the pair
// worker would write for that evaluation — the same derived id — so a
// worker that sees the evaluation later writes nothing; a second POST
// publishes nothing either.
func TestImproveStartsTheLoop(t *testing.T) {
	p, api, base := scopedServer(t)
	for _, w := range p.Workers {
		if _, isPair := w.(*pair.Worker); isPair {
			t.Fatalf("the test pipeline runs the pair worker; this test needs none")
		}
	}
	api.ImproveWait = 25 * time.Second
	envs, sid := sessionIn(t, 3, "project:a", "IMPROVE-ME")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	path := "/v1/sessions/" + url.PathEscape(sid)
	if code, before := call(t, base, "tok-a", "GET", path+"/improvement", nil); code != 200 || before["status"] != pair.LoopAwaitingContext || before["evaluated"] != true {
		t.Fatalf("before: %d %v", code, before)
	}
	code, got := call(t, base, "tok-a", "POST", path+"/improve", map[string]any{})
	rev, _ := got["revision"].(map[string]any)
	next, _ := got["next_attempt"].(map[string]any)
	if code != 200 || got["status"] != pair.LoopRevisionReady || rev == nil || rev["rationale"] == "" || next["iteration"] != float64(2) || next["parent_session"] != sid {
		t.Fatalf("improve: %d %v", code, got)
	}
	if code, again := call(t, base, "tok-a", "POST", path+"/improve", nil); code != 200 || again["status"] != pair.LoopRevisionReady {
		t.Fatalf("second improve: %d %v", code, again)
	}
	if code, bad := call(t, base, "tok-a", "POST", path+"/improve", map[string]any{"bogus": 1}); code != 400 || !strings.Contains(fmt.Sprint(bad["error"]), "bogus") {
		t.Fatalf("improve with an unknown field: %d %v; want 400 naming it", code, bad)
	}
	waitCaughtUp(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evals := records(ctx, t, p, events.TopicEvaluations, events.EvaluationCompleted)
	if len(evals) != 1 {
		t.Fatalf("%d evaluations, want 1", len(evals))
	}
	contexts := records(ctx, t, p, events.TopicLearned, pair.ContextRetrieved)
	if len(contexts) != 1 {
		t.Fatalf("%d contexts on %s, want 1 (two POSTs)", len(contexts), events.TopicLearned)
	}
	if want := events.DerivedIDIn(evals[0].Scope, evals[0].Source, evals[0].ID, pair.ContextRetrieved, 0); contexts[0].ID != want || contexts[0].Source != pair.Source || contexts[0].CausationID != evals[0].ID {
		t.Fatalf("context id %s source %s causation %s, want the worker's derived id %s", contexts[0].ID, contexts[0].Source, contexts[0].CausationID, want)
	}
	// the pair worker, handed the evaluation now, writes nothing
	w := &pair.Worker{Store: p.Store, Index: p.Search.Index, Producer: p.Producer}
	if out, err := w.Derive(ctx, &evals[0]); err != nil || len(out) != 0 {
		t.Fatalf("worker after the route: %d events (%v), want none", len(out), err)
	}
	if _, ok, err := pair.EvaluationEvent(p.Store, events.EntityKey("project:a", sid)); err != nil || ok {
		t.Fatalf("pending evaluation row after the context: %v %v", ok, err)
	}

	// a revision that meets its criteria: once the worker has written its
	// pair_improvement_completed minute on the parent, the parent's view
	// names it (improved_by) and offers no next attempt any more
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	good := -1
	for k, r := range recs {
		if r.Reward == 1 {
			good = k
			break
		}
	}
	renvs, _ := sessionIn(t, good, "project:a", "IMPROVED")
	revID := sid + "/revision-2"
	for k := range renvs {
		renvs[k].ID += "/revision-2"
		renvs[k].SessionID, renvs[k].CorrelationID = revID, revID
		if renvs[k].Type == events.SessionStarted {
			var d map[string]any
			_ = json.Unmarshal(renvs[k].Data, &d)
			d["iteration"], d["parent_session"] = 2, sid
			renvs[k].Data, _ = json.Marshal(d)
		}
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", renvs); code != 202 {
		t.Fatalf("revision: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	var revEval *events.Envelope
	for _, e := range records(ctx, t, p, events.TopicEvaluations, events.EvaluationCompleted) {
		var d events.EvaluationData
		if e.Decode(&d) == nil && d.SessionID == revID {
			revEval = &e
		}
	}
	if revEval == nil {
		t.Fatal("the revision has no evaluation")
	}
	if err := w.Handle(ctx, revEval); err != nil {
		t.Fatalf("worker on the revision: %v", err)
	}
	waitCaughtUp(t, p)
	code, after := call(t, base, "tok-a", "GET", path+"/improvement", nil)
	by, _ := after["improved_by"].(map[string]any)
	if code != 200 || by["session_id"] != revID || by["iteration"] != float64(2) || by["memory_id"] == "" || after["next_attempt"] != nil || after["status"] != pair.LoopImproved {
		t.Fatalf("parent after its revision met its criteria: %d %v", code, after)
	}
	// the chain says of each session what its own view says (the parent's
	// step said REVISION_READY: a walkthrough, 2026-11-30)
	code, revView := call(t, base, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(revID)+"/improvement", nil)
	chain, _ := revView["chain"].([]any)
	if code != 200 || len(chain) != 2 {
		t.Fatalf("the revision's chain: %d %v", code, revView)
	}
	if first, last := chain[0].(map[string]any), chain[1].(map[string]any); first["status"] != after["status"] || last["status"] != revView["status"] {
		t.Fatalf("chain statuses %v, %v; want the views' %v, %v", first["status"], last["status"], after["status"], revView["status"])
	}
}

// records reads every event of type typ on topic, to its end offsets.
func records(ctx context.Context, t *testing.T, p *pipeline.Pipeline, topic events.Topic, typ events.Type) []events.Envelope {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(topic)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()) // read_committed as Chronicle's consumers; the markers reach the end offset
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := p.Admin().ListEndOffsets(ctx, string(topic))
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []events.Envelope
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
			env, err := events.FromRecord(r)
			if err == nil && env.Type == typ {
				out = append(out, env)
			}
		})
	}
	return out
}

// The pair_improvement MCP tool (over /mcp) mirrors the route: a caller
// who may only read the session's scope gets the state as it is
// (AWAITING_CONTEXT, nothing written); a caller who may write it starts
// the loop (REVISION_READY). The stdio backend (Client.Improvement) does
// the same through POST …/improve, falling back to GET for a reader.
func TestImprovementToolStartsTheLoop(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
		{Name: "rb", SHA256: access.Hash("tok-rb"), Read: []string{"project:b"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	t.Cleanup(srv.Close)
	envs, sid := sessionIn(t, 3, "project:b", "TOOL")
	if code, m := call(t, srv.URL, "tok-b", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// stdio backend, reader: falls back to GET, writes nothing
	if m, err := (&httpapi.Client{Base: srv.URL, Token: "tok-rb"}).Improvement(ctx, sid, ""); err != nil || m["status"] != pair.LoopAwaitingContext {
		t.Fatalf("client as a reader: %v %v", m["status"], err)
	}
	tool := func(token string) map[string]any {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "improve-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pair_improvement", Arguments: map[string]any{"session_id": sid}})
		if err != nil || res.IsError {
			t.Fatalf("pair_improvement as %s: %v %+v", token, err, res)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return out
	}
	if st := tool("tok-rb")["status"]; st != pair.LoopAwaitingContext {
		t.Fatalf("reader: status %v, want %s (the tool only reads)", st, pair.LoopAwaitingContext)
	}
	if _, ok, err := pair.EvaluationEvent(p.Store, events.EntityKey("project:b", sid)); err != nil || !ok {
		t.Fatalf("the reader's calls wrote a context: pending evaluation %v %v", ok, err)
	}
	out := tool("tok-b")
	if out["status"] != pair.LoopRevisionReady || out["revision"] == nil {
		t.Fatalf("writer: %v", out)
	}
	// a session it cannot see is named as a session, not "memory not found"
	{
		client := mcp.NewClient(&mcp.Implementation{Name: "improve-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{"tok-b", http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pair_improvement", Arguments: map[string]any{"session_id": "nope"}})
		cs.Close()
		if err != nil || !res.IsError {
			t.Fatalf("pair_improvement of an unknown session: %v %+v; want a tool error", err, res)
		}
		text := fmt.Sprint(res.Content[0].(*mcp.TextContent).Text)
		if !strings.Contains(text, `session "nope" not found`) || strings.Contains(text, "memory") {
			t.Fatalf("unknown session's error: %q", text)
		}
	}
	// the stdio backend for the writer: the loop is started, the same state
	if m, err := (&httpapi.Client{Base: srv.URL, Token: "tok-b"}).Improvement(ctx, sid, "project:b"); err != nil || m["status"] != pair.LoopRevisionReady {
		t.Fatalf("client as the writer: %v %v", m["status"], err)
	}
	waitCaughtUp(t, p)
	if n := len(records(ctx, t, p, events.TopicLearned, pair.ContextRetrieved)); n != 1 {
		t.Fatalf("%d contexts, want 1", n)
	}
}

// namedWorker stands for a worker of that name in Pipeline.Workers (the
// route asks whether a pair worker runs by its name).
type namedWorker string

func (w namedWorker) Name() string                                 { return string(w) }
func (namedWorker) Topic() events.Topic                            { return events.TopicEvaluations }
func (namedWorker) Handle(context.Context, *events.Envelope) error { return nil }

// POST /v1/sessions/{id}/improve on a server whose pair worker dead-lettered
// the session's evaluation: the context will never come, so when the wait
// runs out the route answers 409 naming the letter (handler, reason, the
// id to re-drive) instead of 202 forever; before the letter exists, 202.
func TestImproveNamesADeadLetteredEvaluation(t *testing.T) {
	p, api, base := scopedServer(t)
	envs, sid := sessionIn(t, 3, "project:a", "LETTERED")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	// the route now waits for "the pair worker" instead of retrieving itself
	p.Workers = append(p.Workers, namedWorker("pair"))
	api.ImproveWait = time.Second
	path := "/v1/sessions/" + url.PathEscape(sid) + "/improve"
	if code, m := call(t, base, "tok-a", "POST", path, nil); code != 202 || m["status"] != pair.LoopAwaitingContext {
		t.Fatalf("improve without a letter: %d %v; want 202", code, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evals := records(ctx, t, p, events.TopicEvaluations, events.EvaluationCompleted)
	if len(evals) != 1 {
		t.Fatalf("%d evaluations, want 1", len(evals))
	}
	raw, err := json.Marshal(evals[0])
	if err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey("project:a", sid)
	reason := "pair: session " + sid + " is not in the sessions projection"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	letter := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte(key), Value: raw, Headers: []kgo.RecordHeader{
		{Key: processors.HeaderOriginalTopic, Value: []byte(events.TopicEvaluations)},
		{Key: processors.HeaderOriginalPartition, Value: []byte("2")},
		{Key: processors.HeaderOriginalOffset, Value: []byte("7")},
		{Key: processors.HeaderHandler, Value: []byte("pair@chronicle.evaluations")},
		{Key: processors.HeaderError, Value: []byte(reason)},
	}}
	if err := cl.ProduceSync(ctx, letter).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, m := call(t, base, "tok-a", "POST", path, nil)
	dl, _ := m["dead_letter"].(map[string]any)
	if code != 409 || dl["handler"] != "pair@chronicle.evaluations" || dl["reason"] != reason || dl["id"] != "chronicle.evaluations:2:7" ||
		!strings.Contains(fmt.Sprint(m["error"]), "deadletter redrive --id chronicle.evaluations:2:7") {
		t.Fatalf("improve after the letter: %d %v; want 409 naming it", code, m)
	}
}
