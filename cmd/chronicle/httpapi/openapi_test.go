package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/prometheus/client_golang/prometheus"
)

// routesOnly is a Server whose Routes can be listed and matched without a
// running pipeline (no handler is called).
func routesOnly() *httpapi.Server {
	return &httpapi.Server{P: &pipeline.Pipeline{Registry: prometheus.NewRegistry(), Search: &memories.Service{}}}
}

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.json is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	return doc
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// TestOpenAPIMatchesRoutes checks openapi.json against the real router in
// both directions: every operation of the description is routed by
// Server.Routes' ServeMux to a registered pattern (not 404/405), every
// registered pattern is reached by at least one operation, and every
// concrete request of the access-control table (which covers each
// route's sub-paths: /events, /history, /checkpoints/{id}...) is an
// operation of the description.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	s := routesOnly()
	mux := http.NewServeMux()
	var registered []string
	for _, r := range s.Routes() {
		mux.Handle(r.Pattern, r.Handler)
		registered = append(registered, r.Pattern)
	}
	reached := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			concrete := pathParam.ReplaceAllString(path, "x1")
			req := httptest.NewRequest(method, concrete, nil)
			_, pattern := mux.Handler(req)
			if pattern == "" {
				t.Errorf("openapi.json: %s %s is not a route of the server (no registered pattern serves %s %s)", method, path, method, concrete)
				continue
			}
			reached[pattern] = true
		}
	}
	for _, p := range registered {
		if !reached[p] {
			t.Errorf("route %q is not described in openapi.json: add its operations", p)
		}
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	f := accesstest.Fixture{OwnScope: "project:a", OtherScope: "project:b", Session: "s-1", Memory: "m-1", Workflow: "wf-1",
		WorkflowCheckpoint: "chronicle.workflows:0:7", WorkflowDecision: "d-1", Search: "srch-1", Reasoning: "r-1", Pattern: "pat-1", Secrets: []string{"x"}}
	var undocumented []string
	for _, c := range accesstest.Cases() {
		rq := c.Request(f)
		var body []byte
		if rq.Body != nil {
			body, _ = json.Marshal(rq.Body)
		}
		req := httptest.NewRequest(rq.Method, rq.Path, bytes.NewReader(body))
		if rq.Body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			undocumented = append(undocumented, rq.Method+" "+rq.Path+": "+err.Error())
			continue
		}
		// the table's requests are valid ones: their parameters and
		// bodies must pass the description's schemas
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: the request breaks openapi.json: %v", rq.Method, rq.Path, err)
		}
	}
	// and what the server refuses, the description refuses too
	for _, bad := range []struct{ method, path, body string }{
		{"POST", "/v1/memories", `{"title":"t","description":"d","content":"c","outcome":"success","titel":"typo"}`},
		{"POST", "/v1/memories/m-1/feedback", `{"comment":"no verdict"}`},
		{"GET", "/v1/memories/search?query=q&limit=0", ""},
		{"GET", "/v1/sessions?limit=501", ""},
		{"GET", "/v1/sessions?cursor=garbage", ""},
		{"GET", "/v1/memories/search?query=q&scope=galaxy", ""},
		{"POST", "/v1/sessions/s-1/improve", `{"force":true}`},
		{"POST", "/v1/workflows/w-1/updates", `{"channel":"messages","update":"x","titel":1}`},
		{"POST", "/v1/workflows/w-1/updates", `{"channel":"inbox","update":"x"}`},
		{"POST", "/v1/workflows/w-1/updates", `{"channel":"messages"}`},
		{"POST", "/v1/workflows/w-1/updates", `{"channel":"context","update":null}`},
		{"POST", "/v1/workflows/w-1/updates", `{"channel":"context","update":[1]}`},
		{"POST", "/v1/workflows/w-1/updates", `{"layer":-1,"channel":"messages","update":"x"}`},
		{"POST", "/v1/workflows/w-1/checkpoints", `{"layer":"1"}`},
		{"POST", "/v1/workflows/w-1/commands", `{"command":"launch"}`},
		{"POST", "/v1/workflows/w-1/commands", `{"command":"abort","args":[1]}`},
		{"POST", "/v1/workflows/w-1/commands", `{"command":"replan_dag"}`},
		{"POST", "/v1/workflows/w-1/commands", `{"command":"replan_dag","args":{"requirement":"r","tools":["think"]}}`},
		{"POST", "/v1/workflows/w-1/commands", `{"command":"replan_dag","args":{"tools":["think"],"plan":{}}}`},
		{"POST", "/v1/workflows/w-1/decisions", `{"kind":"robot","question":"q"}`},
		{"POST", "/v1/workflows/w-1/decisions", `{"kind":"human"}`},
		{"POST", "/v1/workflows/w-1/decisions/d-1", `{"by":"ops"}`},
		{"POST", "/v1/workflows/w-1/resume", `{"checkpoint_id":"yesterday"}`},
		{"POST", "/v1/workflows/w-1/fork", `{"workflow_id":"w-2"}`},
		{"POST", "/v1/workflows/w-1/fork", `{"checkpoint_id":"chronicle.workflows:0:7","workflow_id":"w-2","updates":{"inbox":[]}}`},
		{"POST", "/v1/workflows/w-1/complete", `{"outcome":"done"}`},
		{"POST", "/v1/workflows/suggest", `{"intent":"cancel","k":0}`},
		{"POST", "/v1/workflows/suggest", `{"k":2}`},
		{"POST", "/v1/workflows/suggest", `{"intent":"cancel","estimates":{"cancel_reservation":{"cost_usd":-0.5}}}`},
		{"POST", "/v1/workflows/suggest", `{"intent":"cancel","top":3}`},
		{"POST", "/v1/workflows/suggest?scope=bogus", `{"intent":"cancel"}`},
		{"POST", "/v1/workflows/suggest/feedback", `{"accepted":true,"mode":"guess","confidence":0.9}`},
		{"POST", "/v1/workflows/suggest/feedback", `{"mode":"suggestion","confidence":1.5}`},
		{"POST", "/v1/workflows/suggest/feedback", `{"mode":"suggestion","confidence":0.5}`},
		{"POST", "/v1/workflows/suggest/feedback", `{"accepted":false,"mode":"suggestion"}`},
		{"POST", "/v1/dags", `{"tools":[]}`},
		{"POST", "/v1/dags", `{"tools":["think"],"tool":"x"}`},
		{"POST", "/v1/dags", `{"tools":["think"],"rule":"fuzzy"}`},
	} {
		req := httptest.NewRequest(bad.method, bad.path, strings.NewReader(bad.body))
		if bad.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: %v", bad.method, bad.path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err == nil {
			t.Errorf("%s %s %s: openapi.json accepts what the server answers 400", bad.method, bad.path, bad.body)
		}
	}
	// the routes decode their bodies strictly: a body the description
	// accepts is refused with one unknown member more
	check := openAPIRequests(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/sessions/s-1/improve", `{}`},
		{"/v1/memories", `{"title":"t","description":"d","content":"c","outcome":"success"}`},
		{"/v1/memories/m-1/feedback", `{"helpful":true}`},
		{"/v1/workflows/w-1/updates", `{"channel":"messages","update":"x"}`},
		{"/v1/workflows/w-1/checkpoints", `{}`},
		{"/v1/workflows/w-1/commands", `{"command":"abort"}`},
		{"/v1/workflows/w-1/decisions", `{"kind":"agent","question":"q"}`},
		{"/v1/workflows/w-1/decisions/d-1", `{"answer":"yes"}`},
		{"/v1/workflows/w-1/resume", `{}`},
		{"/v1/workflows/w-1/fork", `{"checkpoint_id":"chronicle.workflows:0:7","workflow_id":"w-2"}`},
		{"/v1/workflows/w-1/complete", `{"outcome":"success"}`},
		{"/v1/workflows/suggest", `{"intent":"cancel"}`},
		{"/v1/workflows/suggest/feedback", `{"accepted":true,"mode":"suggestion","confidence":0.5}`},
		{"/v1/dags", `{"tools":["think"]}`},
		{"/v1/searches/srch-1/resume", `{"decision":"approve"}`},
		{"/v1/workflows/w-1/commands", `{"command":"replan_dag","args":{"tools":["think"]}}`},
	} {
		path, body, hdr := c.path, c.body, http.Header{"Content-Type": {"application/json"}}
		if err := check("POST", path, hdr, []byte(body)); err != nil {
			t.Errorf("POST %s %s: openapi.json refuses a body the route takes: %v", path, body, err)
			continue
		}
		typo := strings.Replace(body, "{", `{"titel":"typo",`, 1)
		typo = strings.Replace(typo, ",}", "}", 1)
		if check("POST", path, hdr, []byte(typo)) == nil {
			t.Errorf("POST %s %s: openapi.json accepts an unknown member, the route answers 400", path, typo)
		}
		if strings.Contains(body, `"args":{`) { // replan_dag's args are decoded strictly too
			if typo := strings.Replace(body, `"args":{`, `"args":{"titel":"typo",`, 1); check("POST", path, hdr, []byte(typo)) == nil {
				t.Errorf("POST %s %s: openapi.json accepts an unknown member of replan_dag's args, the route answers 400", path, typo)
			}
		}
	}
	// every request body says what it holds: a bare {"type": "object"}
	// made users read the Go source for the field names
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				if sc := mt.Schema; sc != nil && sc.Ref == "" && sc.Value != nil && bareObject(sc.Value) {
					t.Errorf("openapi.json: %s %s: the %s request body is a bare object: describe its properties", method, path, ct)
				}
			}
		}
	}
	// schema-level examples (the document's validation checks the media
	// types' examples only)
	for name, sc := range doc.Components.Schemas {
		for i, ex := range sc.Value.Examples {
			if err := sc.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("openapi.json: components/schemas/%s: examples[%d] breaks the schema: %v", name, i, err)
			}
		}
	}
	sort.Strings(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("requests of the access-control table that openapi.json does not describe:\n%s", strings.Join(undocumented, "\n"))
	}
}

// bareObject says whether s is an object schema that names nothing it holds.
func bareObject(s *openapi3.Schema) bool {
	return s.Type.Is("object") && len(s.Properties) == 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil &&
		s.MaxProps == nil && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0
}

// exampleCheckpoint is the checkpoint id the examples of openapi.json
// show; TestOpenAPIRequestExamples replaces it with a real one.
const exampleCheckpoint = "chronicle.workflows:0:7"

// TestOpenAPIRequestExamples posts every example openapi.json gives for
// the workflow write routes, POST /v1/dags and POST
// /v1/workflows/suggest/feedback through a real server, in an order in
// which each applies (the commands before the checkpoint that names them
// processed, the decision before its answer, the completion last), and
// wants each answered 200 with the write applied. The server is
// conforming, so each accepted request is also checked against its
// schema: every request schema of these routes is exercised by at least
// one request the route accepts, and the documented examples are true.
//
// The server has tokens, as a production one does, and the examples are
// sent with one of them: an example naming a caller the token is not
// (an answer's by) is refused there, which a server without tokens let
// through (the decision example carried "by": "human:ops", a 403 for
// every token-holding reader who copied it: an OpenAPI walkthrough).
func TestOpenAPIRequestExamples(t *testing.T) {
	doc := loadOpenAPI(t)
	_, _, base := scopedServer(t)
	const token = "tok-admin"
	c := client.New(base, token)
	const wf = "book-1"
	w := "/v1/workflows/" + wf
	steps := []struct{ op, path string }{
		{"/v1/workflows/{id}/updates", w + "/updates"},
		{"/v1/workflows/{id}/commands", w + "/commands"},
		{"/v1/workflows/{id}/decisions", w + "/decisions"},
		{"/v1/workflows/{id}/decisions/{decision}", w + "/decisions/d-refund"}, // the human example's decision_id
		{"/v1/workflows/{id}/checkpoints", w + "/checkpoints"},
		{"/v1/workflows/{id}/resume", w + "/resume"},
		{"/v1/workflows/{id}/fork", w + "/fork"},
		{"/v1/workflows/{id}/complete", w + "/complete"},
		{"/v1/dags", "/v1/dags"},
		{"/v1/workflows/suggest/feedback", "/v1/workflows/suggest/feedback"},
	}
	checkpoint := ""
	for _, st := range steps {
		if st.op == "/v1/workflows/{id}/complete" {
			// a success ends a workflow with no decision pending: the
			// agent example's decision is answered first
			if code, m := call(t, base, token, "POST", w+"/decisions/d-continue", map[string]any{"answer": "continue"}); code != http.StatusOK {
				t.Fatalf("answering d-continue: %d %v", code, m)
			}
		}
		item := doc.Paths.Value(st.op)
		if item == nil || item.Post == nil || item.Post.RequestBody == nil {
			t.Fatalf("openapi.json: no POST %s with a request body", st.op)
		}
		mt := item.Post.RequestBody.Value.Content.Get("application/json")
		names := slices.Sorted(maps.Keys(mt.Examples))
		if len(names) == 0 {
			t.Errorf("openapi.json: POST %s: no example", st.op)
		}
		for _, name := range names {
			raw, err := json.Marshal(mt.Examples[name].Value.Value)
			if err != nil {
				t.Fatal(err)
			}
			if checkpoint != "" {
				raw = bytes.ReplaceAll(raw, []byte(exampleCheckpoint), []byte(checkpoint))
			}
			code, m := call(t, base, token, "POST", st.path, json.RawMessage(raw))
			if code != http.StatusOK {
				t.Fatalf("POST %s, example %q %s: %d %v", st.path, name, raw, code, m)
			}
			if strings.HasPrefix(st.op, "/v1/workflows/{id}/") && (m["event_id"] == nil || m["state"] == nil) {
				t.Fatalf("POST %s, example %q: %v, want the write's result", st.path, name, m)
			}
			if cp, _ := m["checkpoint_id"].(string); st.op == "/v1/workflows/{id}/checkpoints" && cp != "" {
				checkpoint = cp
			}
		}
	}
	if checkpoint == "" {
		t.Fatal("the checkpoints example answered no checkpoint_id")
	}
	v, err := c.State(context.Background(), wf)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != workflows.StatusCompleted || v.DAG == nil || len(v.PendingCommands) != 0 || len(v.PendingDecisions) != 0 {
		t.Fatalf("after the examples: %s", jsonOf(t, v))
	}
}

// TestOpenAPIServed checks GET /openapi.json answers the description
// without a token on a server with tokens.
func TestOpenAPIServed(t *testing.T) {
	s := routesOnly()
	s.Tokens = &access.File{Tokens: []access.Token{{Name: "a", SHA256: access.Hash("chr_a"), Read: []string{"project:a"}, Write: []string{"project:a"}}}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi.json without a token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc, err := openapi3.NewLoader().LoadFromIoReader(resp.Body)
	if err != nil || !slices.Contains(doc.Paths.InMatchingOrder(), "/v1/whoami") {
		t.Fatalf("served document: %v", err)
	}
}

// openAPIRouter loads openapi.json and routes requests to its operations.
func openAPIRouter(t *testing.T) routers.Router {
	t.Helper()
	router, err := sharedRouter()
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// sharedRouter is the router of openapi.json, loaded, validated and built
// once for the package: conforming wraps most tests' servers and built two
// per test (about 1 s per test under -race, kin-openapi's YAML-capable
// loader and the document's validation).
var sharedRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("openapi.json does not load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI document: %w", err)
	}
	return legacy.NewRouter(doc)
})

// findOperation finds the operation of a request (method and request URI,
// body for its requestBody) in openapi.json: the request to validate,
// with its route and path parameters.
func findOperation(router routers.Router, method, uri string, header http.Header, body []byte) (*http.Request, *routers.Route, map[string]string, error) {
	newReq := func(uri string) *http.Request {
		req := httptest.NewRequest(method, uri, bytes.NewReader(body))
		if header != nil {
			req.Header = header.Clone()
		}
		return req
	}
	req := newReq(uri)
	route, params, err := router.FindRoute(req)
	if err != nil {
		// a session id with raw '/' is served too (pathID), but an
		// OpenAPI path parameter is one segment: look up its escaped form
		if alt := escapedSessionPath(uri); alt != uri {
			req = newReq(alt)
			route, params, err = router.FindRoute(req)
		}
	}
	return req, route, params, err
}

// openAPIResponses returns an accesstest.Fixture.Response that checks every
// answer of the access-control suite against openapi.json: its status is
// one the operation documents (or covered by "default"), and a JSON body
// passes the documented schema of that status and content type.
func openAPIResponses(t *testing.T) func(*testing.T, accesstest.Request, accesstest.Caller, *http.Response, []byte) {
	router := openAPIRouter(t)
	// an event stream is checked as the string the description says
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.FileBodyDecoder)
	return func(t *testing.T, rq accesstest.Request, who accesstest.Caller, resp *http.Response, body []byte) {
		t.Helper()
		req, route, params, err := findOperation(router, rq.Method, rq.Path, nil, nil)
		if err != nil {
			t.Errorf("%s %s: not in openapi.json: %v", rq.Method, rq.Path, err)
			return
		}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			t.Errorf("%s %s as %s: the answer (%d) breaks openapi.json: %v", rq.Method, rq.Path, who, resp.StatusCode, err)
		}
	}
}

// openAPIRequests returns a check of a request (its method, request URI,
// headers and whole body) against openapi.json: the path and query
// parameters and the body against the operation's requestBody schema.
// It answers nil for a request the description accepts. Three forms the
// routes serve are read as they serve them, which the description does
// not spell out:
//
//   - a query parameter sent empty (?scope=) is one left out: every route
//     reads its query with url.Values.Get;
//   - a body without a Content-Type is JSON: the routes decode it as JSON
//     whatever the header (POST /v1/events: plain mode);
//   - a POST /v1/events in CloudEvents binary mode (ce- headers) carries
//     the event's data as its body, which the description's schemas (an
//     event or an array of events) do not describe: its body is not
//     checked.
func openAPIRequests(t *testing.T) func(method, uri string, header http.Header, body []byte) error {
	router := openAPIRouter(t)
	return func(method, uri string, header http.Header, body []byte) error {
		if u, err := url.Parse(uri); err == nil && u.RawQuery != "" {
			q := u.Query()
			for k, vs := range q {
				if len(vs) == 1 && vs[0] == "" {
					q.Del(k)
				}
			}
			u.RawQuery = q.Encode()
			uri = u.RequestURI()
		}
		header = header.Clone()
		if header == nil {
			header = http.Header{}
		}
		if len(body) > 0 && header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/json")
		}
		binary := false
		for k := range header {
			binary = binary || strings.HasPrefix(strings.ToLower(k), "ce-")
		}
		req, route, params, err := findOperation(router, method, uri, header, body)
		if err != nil {
			return err
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: binary}}
		return openapi3filter.ValidateRequest(context.Background(), in)
	}
}

// conforming wraps h so that every exchange it serves in a test is checked
// against openapi.json.
//
// The answer as openAPIResponses checks the access suite's: the status
// documented, the body passing its schema. Streams (text/event-stream)
// are checked as the strings they are documented as.
//
// The request as openAPIRequests checks it (parameters and body), judged
// by the answer, because tests send bad requests on purpose:
//
//   - a 2xx answer to a request the description rejects fails the test:
//     the route accepted what openapi.json says it refuses (a schema
//     stricter than the route, or a route laxer than its description);
//   - a 400 whose error is the body decoder's ("body: unknown field …",
//     `body: "layer": got string, want integer`, malformed JSON …) to a
//     request the description accepts fails the test too: such a body is
//     refused whatever the state, so the schema is laxer than the route
//     (but for a member repeated within an object, "appears twice": a
//     schema validates the parsed value, where the repeat is gone, so
//     the description says it in info.description instead; nor for a
//     member of a declared tool's JSON Schema named like a keyword only
//     ignoring case, "the JSON Schema keyword is", on POST /v1/dags: no
//     OpenAPI schema follows a JSON Schema's keywords at every depth, so
//     DAGTool's parameters and output say it in their descriptions; nor
//     for bytes that are no UTF-8 or a lone surrogate's escape, which a
//     parsed value holds as U+FFFD: info.description says it);
//   - any other answer (4xx refusals that depend on the state or on the
//     caller, 5xx) is not judged: a request the schema rejects is expected
//     to get one.
//
// A body larger than MaxBodyBytes is not judged (the route answers 413).
func conforming(t *testing.T, h http.Handler) http.Handler {
	check := openAPIResponses(t)
	checkRequest := openAPIRequests(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, uri, header := r.Method, r.URL.RequestURI(), r.Header.Clone()
		var body []byte
		whole := true
		if r.Body != nil {
			// read up to the limit, hand the handler the same bytes (and
			// whatever follows, so it meets the limit as it would)
			body, _ = io.ReadAll(io.LimitReader(r.Body, httpapi.MaxBodyBytes+1))
			whole = len(body) <= httpapi.MaxBodyBytes
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		}
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		resp := &http.Response{StatusCode: rec.status, Header: w.Header()}
		check(t, accesstest.Request{Method: method, Path: uri}, "test", resp, rec.body.Bytes())
		if !whole {
			return
		}
		switch {
		case rec.status >= 200 && rec.status < 300 && r.URL.Path == "/mcp" && bytes.Contains(rec.body.Bytes(), []byte(`"error":{"code":-326`)):
			// a JSON-RPC error (invalid params, method not found) is a 200
			// on the Streamable HTTP transport: the request was refused
		case rec.status >= 200 && rec.status < 300:
			if err := checkRequest(method, uri, header, body); err != nil {
				t.Errorf("%s %s %.300s: the server answered %d to a request openapi.json rejects (the schema is stricter than the route, or the route laxer than its description): %v", method, uri, body, rec.status, err)
			}
		case rec.status == http.StatusBadRequest:
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(rec.body.Bytes(), &e) == nil && strings.HasPrefix(e.Error, "body: ") && !strings.Contains(e.Error, "appears twice in one object") && !strings.Contains(e.Error, "the JSON Schema keyword is") &&
				!strings.Contains(e.Error, "not valid UTF-8") && !strings.Contains(e.Error, "lone UTF-16 surrogate") &&
				// kin-openapi reads a null member as absent where the
				// schema has a default (layer, policy), so it accepts
				// what the description refuses (null is no integer):
				// TestNullMembersAreRefused checks these refusals
				!strings.Contains(e.Error, "got null, want") &&
				// an integer is written without a fraction or an exponent
				// (1e3 is a 400, I-JSON's interoperable integers), a
				// spelling JSON Schema does not see: it calls 1e3 and
				// 1e400 integers
				!strings.Contains(e.Error, "want integer") {
				if err := checkRequest(method, uri, header, body); err == nil {
					t.Errorf("%s %s %.300s: openapi.json accepts a body the route refuses whatever the state (%s): the schema is laxer than the route", method, uri, body, e.Error)
				}
			}
		}
	})
}

// teeWriter keeps a copy of what goes through it; Unwrap lets
// http.ResponseController reach the real writer (flushes, deadlines).
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// escapedSessionPath is p with the session id of a /v1/sessions/{id}[/sub]
// path percent-escaped (p itself for any other path).
func escapedSessionPath(p string) string {
	const prefix = "/v1/sessions/"
	path, query, _ := strings.Cut(p, "?")
	if !strings.HasPrefix(path, prefix) {
		return p
	}
	id, suffix := path[len(prefix):], ""
	for _, sub := range []string{"/events", "/improvement", "/improve"} {
		if strings.HasSuffix(id, sub) {
			id, suffix = strings.TrimSuffix(id, sub), sub
			break
		}
	}
	out := prefix + url.PathEscape(id) + suffix
	if query != "" {
		out += "?" + query
	}
	return out
}

// The answers a route gives before its handler reads anything are
// documented too: every POST with a JSON body answers 415 to another
// media type (requireJSON), and GET /v1/graph/tools answers 400 to a
// scope that is none. openapi.json listed 415 on POST /v1/events only and
// no 400 on /v1/graph/tools, so a client generated from it had no case for
// them (found by a new user's walkthrough, validating live answers).
func TestOpenAPIDocumentsEarlyRefusals(t *testing.T) {
	check := openAPIResponses(t)
	h := routesOnly().Handler()
	doc := loadOpenAPI(t)
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		op := doc.Paths.Value(path).Post
		if op == nil || op.RequestBody == nil || path == "/mcp" {
			continue
		}
		uri := pathParam.ReplaceAllString(path, "x")
		req := httptest.NewRequest(http.MethodPost, uri, strings.NewReader("x"))
		req.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnsupportedMediaType {
			t.Errorf("POST %s as text/plain: %d %s, want 415", uri, rec.Code, rec.Body)
			continue
		}
		check(t, accesstest.Request{Method: http.MethodPost, Path: uri}, "test", rec.Result(), rec.Body.Bytes())
		n++
	}
	if n < 10 {
		t.Fatalf("checked %d POST operations with a body, want every one (≥ 10)", n)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/graph/tools?scope=bad", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("GET /v1/graph/tools?scope=bad: %d %s, want 400", rec.Code, rec.Body)
	}
	check(t, accesstest.Request{Method: http.MethodGet, Path: "/v1/graph/tools?scope=bad"}, "test", rec.Result(), rec.Body.Bytes())
}

// chronicle inspect's answers are documented as well: 405 to every write
// (info.description says so, but no write operation listed 405) and 503
// on the routes that read the log; GET /v1/learned/stream listed no 503,
// which it answers there and, in serve, when the broker gives no end
// offsets within LearnedBrokerWait (found by a new user's walkthrough).
// (The workflow reads are served from the projections in inspect, and
// answer 503 only over a directory without checkpoint ids, cpid/ rows:
// TestInspectWorkflowState in cmd/chronicle.)
func TestOpenAPIDocumentsReadOnlyAnswers(t *testing.T) {
	check := openAPIResponses(t)
	s := routesOnly()
	s.ReadOnly = true
	h := s.Handler()
	doc := loadOpenAPI(t)
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method := range doc.Paths.Value(path).Operations() {
			if method == http.MethodGet || path == "/mcp" {
				continue
			}
			uri := pathParam.ReplaceAllString(path, "x")
			req := httptest.NewRequest(method, uri, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("read-only %s %s: %d %s, want 405", method, uri, rec.Code, rec.Body)
				continue
			}
			check(t, accesstest.Request{Method: method, Path: uri}, "test", rec.Result(), rec.Body.Bytes())
			n++
		}
	}
	if n < 10 {
		t.Fatalf("checked %d write operations, want every one (≥ 10)", n)
	}
	for _, uri := range []string{"/v1/learned/stream", "/v1/sessions/x/events", "/v1/patterns/x/history", "/v1/cluster"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, uri, nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("read-only GET %s: %d %s, want 503", uri, rec.Code, rec.Body)
			continue
		}
		check(t, accesstest.Request{Method: http.MethodGet, Path: uri}, "test", rec.Result(), rec.Body.Bytes())
	}
}
