package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// stdioEnv, when "1", turns the test binary into an MCP server on
// stdin/stdout (see TestMain): the subprocess of TestStdio.
const stdioEnv = "CHRONICLE_MCPSERVER_TEST_STDIO"

// stdioCaller is the fixed caller of the stdio subprocess.
var stdioCaller = Caller{
	ReadScopes:   []string{"project:a"},
	WriteScopes:  []string{"project:a"},
	DefaultScope: "project:a",
}

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		err := ServeStdio(context.Background(), newFake(), Options{Name: "chronicle-test", Version: "1", Caller: stdioCaller})
		if err != nil {
			fmt.Fprintln(os.Stderr, "ServeStdio:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeBackend is a search.Backend over a fixed set of memories. It applies
// the caller-derived filters it receives (Readable, Writable) the way the
// real one does, and records every call.
type fakeBackend struct {
	mu        sync.Mutex
	memories  []search.Hit
	queries   []search.Query
	records   []search.Record
	feedbacks []search.Feedback
	err       error // when set, every call fails with it
}

func newFake() *fakeBackend {
	return &fakeBackend{memories: []search.Hit{
		{ID: "m1", Title: "Retry with backoff", Description: "retry transient API errors", Content: "wait 1s, 2s, 4s between attempts", Outcome: "success", Confidence: 0.9, UsageCount: 3, Relevance: 0.8, Scope: "project:a"},
		{ID: "m2", Title: "Do not guess ids", Description: "never invent reservation ids", Content: "look the id up first", Outcome: "failure", Confidence: 0.7, UsageCount: 1, Relevance: 0.7, Scope: "team:t"},
		{ID: "m3", Title: "Confirm before booking", Description: "ask the user first", Content: "summarise and confirm", Outcome: "success", Confidence: 0.6, Relevance: 0.6, Scope: "org:o"},
		{ID: "m4", Title: "Other project", Description: "not for project a", Content: "secret of b", Outcome: "success", Confidence: 0.95, Relevance: 0.5, Scope: "project:b"},
		{ID: "m5", Title: "Weak memory", Description: "low confidence", Content: "maybe", Outcome: "success", Confidence: 0.3, Relevance: 0.4, Scope: "project:a"},
	}}
}

func (f *fakeBackend) Search(_ context.Context, q search.Query) (search.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if f.err != nil {
		return search.Result{}, f.err
	}
	var res search.Result
	for _, m := range f.memories {
		kind, _, _ := strings.Cut(m.Scope, ":")
		switch {
		case q.Readable != nil && !q.Readable(m.Scope),
			q.Scope != search.ScopeAll && q.Scope != kind,
			q.Outcome != "all" && q.Outcome != m.Outcome,
			q.MinConfidence != nil && m.Confidence < *q.MinConfidence:
			continue
		}
		res.TotalFound++
		if len(res.Memories) < q.Limit {
			res.Memories = append(res.Memories, m)
			res.TokensUsed += (len(m.Title) + len(m.Description) + len(m.Content)) / 4
		}
	}
	return res, nil
}

func (f *fakeBackend) Record(_ context.Context, r search.Record) (search.Recorded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, r)
	if f.err != nil {
		return search.Recorded{}, f.err
	}
	id := fmt.Sprintf("rec-%d", len(f.records))
	f.memories = append(f.memories, search.Hit{ID: id, Title: r.Title, Description: r.Description, Content: r.Content,
		Outcome: r.Outcome, Confidence: 0.8, Scope: r.Scope})
	if r.Readable != nil && !r.Readable(r.Scope) {
		return search.WithheldRecorded(id, r.Scope), nil // as memories.Service
	}
	return search.Recorded{ID: id, Message: "recorded in " + r.Scope, Confidence: new(0.8), InitialConfidence: new(0.8), Evidence: new(1)}, nil
}

func (f *fakeBackend) Feedback(_ context.Context, fb search.Feedback) (search.FeedbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.feedbacks = append(f.feedbacks, fb)
	if f.err != nil {
		return search.FeedbackResult{}, f.err
	}
	for i, m := range f.memories {
		if m.ID != fb.MemoryID {
			continue
		}
		if fb.Writable != nil && !fb.Writable(m.Scope) {
			break
		}
		c := m.Confidence - 0.1
		if fb.Helpful {
			c = m.Confidence + 0.05
		}
		c = math.Round(math.Min(1, math.Max(0, c))*100) / 100
		f.memories[i].Confidence = c
		if fb.Readable != nil && !fb.Readable(m.Scope) {
			return search.WithheldFeedback(m.Scope), nil // as memories.Service
		}
		return search.FeedbackResult{Success: true, NewConfidence: new(c), Message: "applied"}, nil
	}
	return search.FeedbackResult{}, fmt.Errorf("%w: %s", search.ErrNotFound, fb.MemoryID)
}

// calls returns copies of the recorded calls.
func (f *fakeBackend) calls() (q []search.Query, r []search.Record, fb []search.Feedback) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries), slices.Clone(f.records), slices.Clone(f.feedbacks)
}

func (f *fakeBackend) ncalls() int {
	q, r, fb := f.calls()
	return len(q) + len(r) + len(fb)
}

func (f *fakeBackend) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Bearer tokens of the HTTP tests and their callers.
var tokens = map[string]Caller{
	// reads its project and its team, writes nothing
	"reader": {ReadScopes: []string{"project:a", "team:t"}, DefaultScope: "project:a"},
	// reads everything, writes its project
	"writer": {ReadScopes: []string{"*"}, WriteScopes: []string{"project:a"}, DefaultScope: "project:a"},
	// may write project:a but its default scope is elsewhere
	"misconfigured": {ReadScopes: []string{"*"}, WriteScopes: []string{"project:a"}, DefaultScope: "team:t"},
	// writes project:a and reads nothing (a write-only producer)
	"write-only": {WriteScopes: []string{"project:a"}, DefaultScope: "project:a"},
}

func callerFromToken(_ context.Context, r *http.Request) (Caller, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return Caller{}, errors.New("no bearer token")
	}
	c, ok := tokens[token]
	if !ok {
		return Caller{}, errors.New("unknown token")
	}
	return c, nil
}

// header adds fixed headers to every request of an HTTP client.
type header struct {
	set  http.Header
	base http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// newHTTP serves a fresh fake backend over HTTPHandler with token callers.
func newHTTP(t *testing.T) (*fakeBackend, string) {
	t.Helper()
	fake := newFake()
	srv := httptest.NewServer(HTTPHandler(fake, Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken}))
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

// connectHTTP connects the SDK's client over the streamable HTTP transport
// with the given request headers.
func connectHTTP(t *testing.T, url string, hdr http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: header{set: hdr, base: http.DefaultTransport}},
		MaxRetries: -1,
	}
	cs, err := client.Connect(mcptest.Context(t), transport, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

func connectToken(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, url, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("connect as %s: %v", token, err)
	}
	return cs
}

func ids(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// schemaOf returns a listed tool's input schema as a JSON object.
func schemaOf(t *testing.T, tool *mcp.Tool) map[string]any {
	t.Helper()
	return jsonObject(t, tool.InputSchema)
}

// outputSchemaOf is tool's output schema as JSON.
func outputSchemaOf(t *testing.T, tool *mcp.Tool) map[string]any {
	t.Helper()
	return jsonObject(t, tool.OutputSchema)
}

// jsonObject is v marshalled to JSON and read back as an object.
func jsonObject(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func prop(t *testing.T, schema map[string]any, name string) map[string]any {
	t.Helper()
	props, _ := schema["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		t.Fatalf("schema has no property %q: %v", name, schema)
	}
	return p
}

func TestHTTPListTools(t *testing.T) {
	_, url := newHTTP(t)
	cs := connectToken(t, url, "reader")
	res, err := cs.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"memory_feedback", "memory_record", "memory_search"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	wantRequired := map[string][]string{
		"memory_search":   {"query"},
		"memory_record":   {"content", "description", "outcome", "title"},
		"memory_feedback": {"helpful", "memory_id"},
	}
	for name, want := range wantRequired {
		s := schemaOf(t, byName[name])
		if s["type"] != "object" {
			t.Errorf("%s: schema type %v", name, s["type"])
		}
		var got []string
		for _, r := range s["required"].([]any) {
			got = append(got, r.(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: required %v, want %v", name, got, want)
		}
		if byName[name].OutputSchema == nil {
			t.Errorf("%s: no output schema", name)
		}
	}

	s := schemaOf(t, byName["memory_search"])
	checks := []struct {
		prop, key string
		want      any
	}{
		{"query", "type", "string"},
		{"scope", "pattern", `^(project|team|org|all)$|^(project|team|org):[A-Za-z0-9._-]+$`}, // a kind or one scope (issue 11)
		{"scope", "default", "all"},
		{"outcome", "enum", []any{"success", "failure", "all"}},
		{"outcome", "default", "all"},
		{"limit", "type", "integer"},
		{"limit", "default", 5.0},
		{"limit", "minimum", 1.0},
		{"limit", "maximum", 20.0},
		{"min_confidence", "type", "number"},
		{"min_confidence", "default", 0.5},
	}
	for _, c := range checks {
		got := prop(t, s, c.prop)[c.key]
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("memory_search.%s.%s = %v, want %v", c.prop, c.key, got, c.want)
		}
	}
	r := schemaOf(t, byName["memory_record"])
	for _, c := range []struct {
		prop, key string
		want      any
	}{
		{"title", "maxLength", 50.0},
		{"description", "maxLength", 200.0},
		{"outcome", "enum", []any{"success", "failure"}},
		{"tags", "type", "array"},
		{"tags", "items", map[string]any{"type": "string", "minLength": 1.0}},
	} {
		if got := prop(t, r, c.prop)[c.key]; fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("memory_record.%s.%s = %v, want %v", c.prop, c.key, got, c.want)
		}
	}
	if got := prop(t, schemaOf(t, byName["memory_feedback"]), "helpful")["type"]; got != "boolean" {
		t.Errorf("memory_feedback.helpful type %v", got)
	}
	// The answers' confidence, initial_confidence, evidence and
	// new_confidence are optional numbers, not null: a write-only caller's
	// answer leaves them out (search.WithheldRecorded) instead of reading
	// 0, a real confidence.
	for _, c := range []struct {
		tool     string
		required []string
		optional map[string]string
	}{
		{"memory_record", []string{"id", "message"}, map[string]string{"confidence": "number", "initial_confidence": "number", "evidence": "integer", "merged_into": "string", "pruned": "boolean"}},
		{"memory_feedback", []string{"message", "success"}, map[string]string{"new_confidence": "number"}},
	} {
		out := outputSchemaOf(t, byName[c.tool])
		var got []string
		for _, r := range out["required"].([]any) {
			got = append(got, r.(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, c.required) {
			t.Errorf("%s output: required %v, want %v", c.tool, got, c.required)
		}
		for name, typ := range c.optional {
			p := prop(t, out, name)
			if p["type"] != typ {
				t.Errorf("%s output: %s type %v, want %s (never null)", c.tool, name, p["type"], typ)
			}
			if d, _ := p["description"].(string); (name != "merged_into" && name != "pruned") && !strings.Contains(d, "absent when the caller may not read") {
				t.Errorf("%s output: %s description %q does not say when it is absent", c.tool, name, d)
			}
		}
	}
}

// A write-only caller's memory_record and memory_feedback answers have no
// confidence, initial_confidence, evidence nor new_confidence member:
// before, the typed answers read 0 (a real confidence) where the HTTP
// routes leave those out. A writer that reads the scope gets them.
func TestWriteOnlyAnswersLeaveOutConfidence(t *testing.T) {
	_, url := newHTTP(t)
	args := map[string]any{"title": "Retry with jitter", "description": "add jitter to backoff", "content": "random 0..1s", "outcome": "success"}
	structured := func(res *mcp.CallToolResult) map[string]any {
		t.Helper()
		if res.IsError {
			t.Fatalf("tool error: %s", mcptest.Text(res))
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	wo := connectToken(t, url, "write-only")
	rec := structured(mcptest.Call(t, wo, "memory_record", args))
	for _, k := range []string{"confidence", "initial_confidence", "evidence", "merged_into", "pruned"} {
		if _, ok := rec[k]; ok {
			t.Errorf("memory_record as a write-only caller answers %s: %v", k, rec)
		}
	}
	if rec["id"] == nil || rec["message"] == nil {
		t.Errorf("memory_record as a write-only caller: %v, want id and message", rec)
	}
	fb := structured(mcptest.Call(t, wo, "memory_feedback", map[string]any{"memory_id": "m1", "helpful": true}))
	if _, ok := fb["new_confidence"]; ok || fb["success"] != true {
		t.Errorf("memory_feedback as a write-only caller: %v, want success without new_confidence", fb)
	}
	// the writer reads project:a: the members are there
	w := connectToken(t, url, "writer")
	if rec := structured(mcptest.Call(t, w, "memory_record", args)); rec["confidence"] != 0.8 || rec["evidence"] != 1.0 {
		t.Errorf("memory_record as the writer: %v, want confidence and evidence", rec)
	}
	if fb := structured(mcptest.Call(t, w, "memory_feedback", map[string]any{"memory_id": "m1", "helpful": true})); fb["new_confidence"] == nil {
		t.Errorf("memory_feedback as the writer: %v, want new_confidence", fb)
	}
}

func TestHTTPSearch(t *testing.T) {
	fake, url := newHTTP(t)

	// Defaults, and the reader's scopes: project:a and team:t only.
	reader := connectToken(t, url, "reader")
	got := mcptest.Structured[search.Result](t, mcptest.Call(t, reader, "memory_search", map[string]any{"query": "flight change"}))
	if want := []string{"m1", "m2"}; !slices.Equal(ids(got.Memories), want) {
		t.Fatalf("reader sees %v, want %v", ids(got.Memories), want)
	}
	if got.TotalFound != 2 || got.TokensUsed <= 0 {
		t.Errorf("total_found %d tokens_used %d", got.TotalFound, got.TokensUsed)
	}
	if m, want := got.Memories[0], newFake().memories[0]; !reflect.DeepEqual(m, want) {
		t.Errorf("hit %+v, want %+v", m, want)
	}
	qs, _, _ := fake.calls()
	q := qs[len(qs)-1]
	if q.Text != "flight change" || q.Scope != "all" || q.Outcome != "all" || q.Limit != 5 || q.MinConfidence == nil || *q.MinConfidence != 0.5 {
		t.Errorf("query with defaults: %+v (min_confidence %v)", q, q.MinConfidence)
	}
	if q.Readable == nil {
		t.Fatal("reader: Readable is nil (every scope)")
	}
	for scope, want := range map[string]bool{"project:a": true, "team:t": true, "project:b": false, "org:o": false, "team:a": false} {
		if q.Readable(scope) != want {
			t.Errorf("reader: Readable(%s) = %v", scope, !want)
		}
	}

	// Explicit arguments arrive unchanged; "*" reads every scope.
	writer := connectToken(t, url, "writer")
	got = mcptest.Structured[search.Result](t, mcptest.Call(t, writer, "memory_search", map[string]any{
		"query": "booking", "scope": "project", "outcome": "success", "limit": 1, "min_confidence": 0.2,
	}))
	if want := []string{"m1"}; !slices.Equal(ids(got.Memories), want) || got.TotalFound != 3 {
		t.Errorf("writer sees %v of %d, want [m1] of 3 (m1, m4, m5)", ids(got.Memories), got.TotalFound)
	}
	qs, _, _ = fake.calls()
	q = qs[len(qs)-1]
	if q.Scope != "project" || q.Outcome != "success" || q.Limit != 1 || *q.MinConfidence != 0.2 {
		t.Errorf("query %+v (min_confidence %v)", q, *q.MinConfidence)
	}
	if q.Readable != nil {
		t.Errorf("caller with * : Readable should be nil (every scope)")
	}
	// one scope as the filter reaches the backend unchanged (issue 11)
	mcptest.Structured[search.Result](t, mcptest.Call(t, writer, "memory_search", map[string]any{"query": "booking", "scope": "project:a"}))
	qs, _, _ = fake.calls()
	if q = qs[len(qs)-1]; q.Scope != "project:a" {
		t.Errorf("scope project:a reached the backend as %q", q.Scope)
	}

	// one scope the reader does not read is a tool error (as the HTTP
	// route's 403), not an empty list; the backend is not asked
	before, _, _ := fake.calls()
	mcptest.WantToolError(t, mcptest.Call(t, reader, "memory_search", map[string]any{"query": "booking", "scope": "project:b"}), "may not read project:b")
	if after, _, _ := fake.calls(); len(after) != len(before) {
		t.Errorf("a search of an unreadable scope reached the backend")
	}

	// Nothing found is an empty list, not null.
	res := mcptest.Call(t, reader, "memory_search", map[string]any{"query": "x", "min_confidence": 1})
	if got := mcptest.Structured[search.Result](t, res); got.Memories == nil || len(got.Memories) != 0 || got.TotalFound != 0 {
		t.Errorf("empty search: %+v", got)
	}
	if !strings.Contains(mcptest.Text(res), `"memories":[]`) {
		t.Errorf("empty search text %s", mcptest.Text(res))
	}
}

func TestHTTPRecord(t *testing.T) {
	fake, url := newHTTP(t)
	args := map[string]any{
		"title":       "Check the fare class first",
		"description": "before changing a flight, read the fare class: basic economy cannot be changed",
		"content":     "1. get the reservation 2. read the cabin 3. refuse changes for basic economy",
		"outcome":     "success",
		"tags":        []string{"airline", "change"},
	}
	writer := connectToken(t, url, "writer")
	got := mcptest.Structured[search.Recorded](t, mcptest.Call(t, writer, "memory_record", args))
	if got.ID != "rec-1" || got.InitialConfidence == nil || *got.InitialConfidence != 0.8 || got.Message != "recorded in project:a" {
		t.Errorf("recorded %+v", got)
	}
	_, recs, _ := fake.calls()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	want := search.Record{Title: args["title"].(string), Description: args["description"].(string),
		Content: args["content"].(string), Outcome: "success", Tags: []string{"airline", "change"}, Scope: "project:a",
		Source: "mcp:test-client"} // the recorder, as memory_search and memory_feedback name it (issue 11)
	if fmt.Sprint(recs[0]) != fmt.Sprint(want) {
		t.Errorf("backend got %+v, want %+v", recs[0], want)
	}
	// An idempotency key reaches the backend, which makes a retry one
	// recording (as POST /v1/memories' Idempotency-Key header does).
	args["idempotency_key"] = "7c0e5a0e-retry"
	mcptest.Structured[search.Recorded](t, mcptest.Call(t, writer, "memory_record", args))
	delete(args, "idempotency_key")
	if _, recs, _ := fake.calls(); len(recs) != 2 || recs[1].IdempotencyKey != "7c0e5a0e-retry" {
		t.Errorf("backend got %+v, want the second record with idempotency key 7c0e5a0e-retry", recs)
	}

	// scope picks where the memory goes, as POST /v1/memories' body
	// member does (before, /mcp wrote to the default write scope only):
	// one the caller writes reaches the backend, even past a default it
	// may not write; another is refused naming it, a malformed one naming
	// the argument; neither reaches the backend
	args["scope"] = "project:a"
	mcptest.Structured[search.Recorded](t, mcptest.Call(t, connectToken(t, url, "misconfigured"), "memory_record", args))
	if _, recs, _ := fake.calls(); len(recs) != 3 || recs[2].Scope != "project:a" {
		t.Errorf("backend got %+v, want the third record in project:a", recs)
	}
	args["scope"] = "project:b"
	mcptest.WantToolError(t, mcptest.Call(t, writer, "memory_record", args), "memory_record: scope: this token may not write project:b")
	args["scope"] = "bogus"
	mcptest.WantToolError(t, mcptest.Call(t, writer, "memory_record", args), `invalid argument: /scope: pattern: "bogus" is not project:<id>, team:<id> or org:<id>`)
	// memory_feedback names the same argument the same way (it said
	// "scope: …" without the pointer: a walkthrough, 2026-12-06)
	mcptest.WantToolError(t, mcptest.Call(t, writer, "memory_feedback", map[string]any{"memory_id": "m1", "helpful": true, "scope": "bogus"}), `invalid argument: /scope: pattern: "bogus" is not project:<id>, team:<id> or org:<id>`)
	delete(args, "scope")
	if _, recs, _ := fake.calls(); len(recs) != 3 {
		t.Errorf("refused records reached the backend: %d records", len(recs))
	}

	// A caller without write scope gets a tool error saying so (not naming
	// its default scope, which it cannot write either); the backend is not
	// called.
	reader := connectToken(t, url, "reader")
	mcptest.WantToolError(t, mcptest.Call(t, reader, "memory_record", args), "may write no scope")
	// Its default scope must be writable too.
	mcptest.WantToolError(t, mcptest.Call(t, connectToken(t, url, "misconfigured"), "memory_record", args), "may not write scope team:t")
	// A client cannot pick another caller with the internal header.
	forged, err := connectHTTP(t, url, http.Header{"Authorization": {"Bearer reader"}, callerHeader: {"anything"}})
	if err != nil {
		t.Fatal(err)
	}
	mcptest.WantToolError(t, mcptest.Call(t, forged, "memory_record", args), "may write no scope")
	if _, recs, _ := fake.calls(); len(recs) != 3 {
		t.Errorf("refused records reached the backend: %d records", len(recs))
	}
}

func TestHTTPFeedback(t *testing.T) {
	fake, url := newHTTP(t)
	writer := connectToken(t, url, "writer")
	got := mcptest.Structured[search.FeedbackResult](t, mcptest.Call(t, writer, "memory_feedback",
		map[string]any{"memory_id": "m1", "helpful": true, "comment": "saved a retry loop"}))
	if !got.Success || got.NewConfidence == nil || *got.NewConfidence != 0.95 || got.Message != "applied" {
		t.Errorf("feedback %+v", got)
	}
	got = mcptest.Structured[search.FeedbackResult](t, mcptest.Call(t, writer, "memory_feedback", map[string]any{"memory_id": "m1", "helpful": false}))
	if !got.Success || got.NewConfidence == nil || *got.NewConfidence != 0.85 {
		t.Errorf("negative feedback %+v", got)
	}
	_, _, fbs := fake.calls()
	if len(fbs) != 2 || fbs[0].MemoryID != "m1" || !fbs[0].Helpful || fbs[0].Comment != "saved a retry loop" || fbs[1].Helpful {
		t.Fatalf("backend got %+v", fbs)
	}
	if w := fbs[0].Writable; w == nil || !w("project:a") || w("project:b") || w("team:t") {
		t.Errorf("Writable does not reflect WriteScopes [project:a]")
	}

	// Memories outside the caller's write scopes, and unknown ones: not found.
	mcptest.WantToolError(t, mcptest.Call(t, writer, "memory_feedback", map[string]any{"memory_id": "m4", "helpful": true}), "memory not found", "m4")
	mcptest.WantToolError(t, mcptest.Call(t, writer, "memory_feedback", map[string]any{"memory_id": "nope", "helpful": true}), "memory not found")
	// A caller that writes nothing is refused before the backend.
	n := fake.ncalls()
	mcptest.WantToolError(t, mcptest.Call(t, connectToken(t, url, "reader"), "memory_feedback", map[string]any{"memory_id": "m1", "helpful": true}), "may write no scope")
	if fake.ncalls() != n {
		t.Error("refused feedback reached the backend")
	}
}

func TestHTTPInvalidArguments(t *testing.T) {
	fake, url := newHTTP(t)
	cs := connectToken(t, url, "writer")
	record := func(change map[string]any) map[string]any {
		args := map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "failure"}
		for k, v := range change {
			if v == nil {
				delete(args, k)
			} else {
				args[k] = v
			}
		}
		return args
	}
	cases := []struct {
		tool string
		args map[string]any
		want []string // the field, and the reason
	}{
		{"memory_search", map[string]any{}, []string{"invalid argument: /query: required: missing"}},
		{"memory_search", map[string]any{"query": ""}, []string{"query", "minLength"}},
		{"memory_search", map[string]any{"query": "   "}, []string{"query", "must not be empty"}},
		{"memory_search", map[string]any{"query": "x", "scope": "galaxy"}, []string{"scope", "pattern"}},
		{"memory_search", map[string]any{"query": "x", "scope": "project:"}, []string{"scope", "pattern"}},
		{"memory_search", map[string]any{"query": "x", "outcome": "maybe"}, []string{"outcome", "enum"}},
		{"memory_search", map[string]any{"query": "x", "limit": 21}, []string{"limit", "maximum"}},
		{"memory_search", map[string]any{"query": "x", "limit": 0}, []string{"limit", "minimum"}},
		{"memory_search", map[string]any{"query": "x", "limit": 2.5}, []string{"limit"}},
		{"memory_search", map[string]any{"query": "x", "min_confidence": 1.5}, []string{"min_confidence", "maximum"}},
		{"memory_search", map[string]any{"query": 7}, []string{"query", "type"}},
		{"memory_search", map[string]any{"query": "x", "colour": "red"}, []string{`invalid argument: /colour: additionalProperties: "colour" is not an argument of this tool`}},
		{"memory_record", record(map[string]any{"title": strings.Repeat("t", 51)}), []string{"title", "maxLength"}},
		{"memory_record", record(map[string]any{"title": strings.Repeat("é", 51)}), []string{"title", "maxLength"}},
		{"memory_record", record(map[string]any{"description": strings.Repeat("d", 201)}), []string{"description", "maxLength", `"` + strings.Repeat("d", 80) + `"… contains 201`}},
		{"memory_record", record(map[string]any{"title": ""}), []string{"title", "minLength"}},
		{"memory_record", record(map[string]any{"title": " \t"}), []string{"title", "must not be empty"}},
		{"memory_record", record(map[string]any{"content": nil}), []string{"invalid argument: /content: required: missing"}},
		{"memory_record", record(map[string]any{"description": nil}), []string{"description", "required"}},
		{"memory_record", record(map[string]any{"outcome": "all"}), []string{"outcome", "enum"}},
		// an item by its own pointer (it was "/tags: an item: minLength":
		// a subscriber's walkthrough, 2026-12-06)
		{"memory_record", record(map[string]any{"tags": []string{"ok", ""}}), []string{"invalid argument: /tags/1: minLength:"}},
		{"memory_record", record(map[string]any{"tags": []string{"ok", "a", "b", ""}}), []string{"invalid argument: /tags/3: minLength:"}},
		{"memory_record", record(map[string]any{"tags": "airline"}), []string{"tags", "type"}},
		{"memory_record", record(map[string]any{"idempotency_key": strings.Repeat("k", 256)}), []string{"invalid argument: /idempotency_key: maxLength:", "256", "255"}},
		{"memory_record", record(map[string]any{"idempotency_key": "k\u00e9"}), []string{"invalid argument: /idempotency_key: pattern:", "not printable ASCII"}},
		{"memory_record", record(map[string]any{"idempotency_key": ""}), []string{"invalid argument: /idempotency_key: minLength:"}},
		{"memory_feedback", map[string]any{"memory_id": "m1"}, []string{"invalid argument: /helpful: required: missing"}},
		{"memory_feedback", map[string]any{"memory_id": "", "helpful": true}, []string{"memory_id", "minLength"}},
		{"memory_feedback", map[string]any{"memory_id": "m1", "helpful": "yes"}, []string{"helpful", "type"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %v", c.tool, c.args), func(t *testing.T) {
			res := mcptest.Call(t, cs, c.tool, c.args)
			t.Log(mcptest.Text(res))
			mcptest.WantToolError(t, res, c.want...)
		})
	}
	if n := fake.ncalls(); n != 0 {
		t.Errorf("invalid calls reached the backend %d times", n)
	}
	// Exactly at the limits is fine.
	ok := record(map[string]any{"title": strings.Repeat("é", 50), "description": strings.Repeat("d", 200)})
	mcptest.Structured[search.Recorded](t, mcptest.Call(t, cs, "memory_record", ok))
}

func TestHTTPBackendErrors(t *testing.T) {
	fake, url := newHTTP(t)
	cs := connectToken(t, url, "writer")
	rec := map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success"}

	fake.setErr(fmt.Errorf("%w: content: duplicate of m1", search.ErrInvalid))
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_record", rec), "invalid argument: content: duplicate of m1")

	fake.setErr(fmt.Errorf("%w: m9", search.ErrNotFound))
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_feedback", map[string]any{"memory_id": "m9", "helpful": true}), "memory not found: m9")

	fake.setErr(errors.New("broker did not acknowledge"))
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "q"}), "memory_search failed", "broker did not acknowledge")

	// The session survives tool errors.
	fake.setErr(nil)
	if got := mcptest.Structured[search.Result](t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "q"})); got.TotalFound == 0 {
		t.Errorf("search after errors found nothing")
	}
}

func TestHTTPUnauthenticated(t *testing.T) {
	fake, url := newHTTP(t)
	for _, hdr := range []http.Header{{}, {"Authorization": {"Bearer stolen"}}} {
		if _, err := connectHTTP(t, url, hdr); err == nil {
			t.Errorf("connect with %v: no error", hdr)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "no bearer token") {
		t.Errorf("status %d body %q, want 401 naming the reason", resp.StatusCode, body)
	}
	if fake.ncalls() != 0 {
		t.Error("unauthenticated requests reached the backend")
	}
}

// TestFixedCallerHTTP: without CallerFunc, every HTTP call runs for
// Options.Caller; the zero Caller reads and writes nothing.
func TestFixedCallerHTTP(t *testing.T) {
	fake := newFake()
	srv := httptest.NewServer(HTTPHandler(fake, Options{}))
	t.Cleanup(srv.Close)
	cs, err := connectHTTP(t, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo; got.Name != "chronicle" || got.Version != "dev" {
		t.Errorf("server info %+v", got)
	}
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "q"}), "may read no scope")
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_record", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success"}),
		"may write no scope")
	if fake.ncalls() != 0 {
		t.Error("calls of the zero caller reached the backend")
	}
}

// TestStdio runs the test binary as an MCP server on stdin/stdout (see
// TestMain) and drives it with the SDK's command transport.
func TestStdio(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioEnv+"=1")
	srv := mcptest.Start(t, cmd)
	cs := srv.Session
	if got := cs.InitializeResult().ServerInfo.Name; got != "chronicle-test" {
		t.Errorf("server name %q", got)
	}

	tools, err := cs.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 3 {
		t.Errorf("%d tools", len(tools.Tools))
	}

	// The fixed caller reads project:a only: m1 (m5 is below 0.5).
	got := mcptest.Structured[search.Result](t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "retry"}))
	if want := []string{"m1"}; !slices.Equal(ids(got.Memories), want) || got.Memories[0].Title != "Retry with backoff" {
		t.Errorf("search: %+v", got)
	}
	rec := mcptest.Structured[search.Recorded](t, mcptest.Call(t, cs, "memory_record", map[string]any{
		"title": "Retry with jitter", "description": "add jitter to backoff", "content": "random 0..1s", "outcome": "success",
	}))
	if rec.ID != "rec-1" || rec.Message != "recorded in project:a" || rec.InitialConfidence == nil || *rec.InitialConfidence != 0.8 {
		t.Errorf("record: %+v", rec)
	}
	// The new memory is visible to the next search (the same backend).
	got = mcptest.Structured[search.Result](t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "retry", "min_confidence": 0.8}))
	if want := []string{"m1", "rec-1"}; !slices.Equal(ids(got.Memories), want) {
		t.Errorf("search after record: %v, want %v", ids(got.Memories), want)
	}
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "x", "limit": 50}), "limit")
	mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_feedback", map[string]any{"memory_id": "m2", "helpful": true}), "memory not found")

	srv.Close(t)
}

// memory_search passes the caller's write scopes to the backend
// (search.Query.Writable): a search writes usage (memory.retrieved.v1)
// only for hits in scopes the caller writes, so a reader changes no
// state. Before, the filter was unset and every hit's scope got a usage
// event, whoever searched (found by a tenant-isolation review).
func TestMemorySearchWritesUsageOnlyWhereTheCallerWrites(t *testing.T) {
	fake, url := newHTTP(t)
	for token, want := range map[string]map[string]bool{
		"reader": {"project:a": false, "team:t": false, "project:b": false},
		"writer": {"project:a": true, "team:t": false, "project:b": false},
	} {
		cs := connectToken(t, url, token)
		mcptest.Structured[search.Result](t, mcptest.Call(t, cs, "memory_search", map[string]any{"query": "flight change"}))
		qs, _, _ := fake.calls()
		q := qs[len(qs)-1]
		if q.Writable == nil {
			t.Fatalf("%s: Writable is nil (usage written in every scope)", token)
		}
		for scope, w := range want {
			if q.Writable(scope) != w {
				t.Errorf("%s: Writable(%s) = %v, want %v", token, scope, !w, w)
			}
		}
	}
}

// TestHTTPRefusesAnotherOrigin: the MCP Streamable HTTP transport says a
// server MUST validate the Origin header and answer 403 Forbidden when it
// is present and invalid. A POST whose Origin is another site than the
// Host it was sent to is refused before authentication and before any tool
// runs, with a JSON-RPC error without an id; the same request from its own
// origin, or without Origin (an MCP client that is no browser), is served.
// Before, the other site's request was served (a standards-conformance
// walkthrough).
func TestHTTPRefusesAnotherOrigin(t *testing.T) {
	fake, url := newHTTP(t)
	post := func(origin, fetchSite string) (int, string) {
		return postRecord(t, url, "t", "application/json", func(req *http.Request) {
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			if fetchSite != "" {
				req.Header.Set("Sec-Fetch-Site", fetchSite)
			}
		})
	}
	for _, c := range []struct{ origin, site string }{{"http://evil.example", ""}, {"", "cross-site"}, {"http://evil.example", "cross-site"}} {
		code, body := post(c.origin, c.site)
		if _, ok := rpcErrorWithoutID(body); code != http.StatusForbidden || !ok {
			t.Errorf("Origin %q Sec-Fetch-Site %q: %d %s, want 403 with a JSON-RPC error without id", c.origin, c.site, code, body)
		}
	}
	if n := fake.ncalls(); n != 0 {
		t.Fatalf("a cross-origin request reached the backend (%d calls)", n)
	}
	for _, origin := range []string{"", strings.TrimSuffix(url, "/mcp")} {
		if code, body := post(origin, ""); code != http.StatusOK {
			t.Errorf("Origin %q: %d %s, want 200", origin, code, body)
		}
	}
}

// TestHTTPRefusesTextThatIsNotUTF8: a POST to /mcp whose body holds bytes
// that are not UTF-8 or a lone surrogate's \u escape is a 400 with a
// JSON-RPC parse error, and one with a charset other than UTF-8 a 415;
// nothing reaches the backend. Before, the SDK read each as U+FFFD, so
// memory_record titles "A\xff", "A\ud800" and "A\udfff" were one memory
// with its evidence counted three times (a re-test, 2026-12-01).
func TestHTTPRefusesTextThatIsNotUTF8(t *testing.T) {
	fake, url := newHTTP(t)
	post := func(title, contentType string) (int, string) { return postRecord(t, url, title, contentType, nil) }
	for _, c := range []struct {
		title, contentType string
		code               int
	}{{"A\xff", "application/json", 400}, {`A\ud800`, "application/json", 400}, {`A\udfff`, "application/json", 400}, {"A", "application/json; charset=latin-1", 415}} {
		code, body := post(c.title, c.contentType)
		if rpcCode, ok := rpcErrorWithoutID(body); code != c.code || !ok || rpcCode != -32700 {
			t.Errorf("title %q, %s: %d %s; want %d with a JSON-RPC parse error", c.title, c.contentType, code, body, c.code)
		}
	}
	if n := fake.ncalls(); n != 0 {
		t.Fatalf("a refused request reached the backend (%d calls)", n)
	}
	if code, body := post("A é", "application/json; charset=utf-8"); code != http.StatusOK {
		t.Errorf("a UTF-8 title: %d %s, want 200", code, body)
	}
}

// postRecord POSTs a memory_record call with title to the /mcp at url as
// the writer, with contentType and whatever set adds, and returns the
// status and body.
func postRecord(t *testing.T, url, title, contentType string, set func(*http.Request)) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"`+title+`","description":"d","content":"c","outcome":"success"}}}`))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer writer")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if set != nil {
		set(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rpcErrorWithoutID reads body as a JSON-RPC error object without an id,
// returning its code.
func rpcErrorWithoutID(body string) (code int, ok bool) {
	var rpc struct {
		ID    any `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &rpc) != nil || rpc.Error == nil || rpc.ID != nil {
		return 0, false
	}
	return rpc.Error.Code, true
}
