package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
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
		WorkflowCheckpoint: "chronicle.workflows:0:7", WorkflowDecision: "d-1", Search: "srch-1", Reasoning: "r-1", Secrets: []string{"x"}}
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
	sort.Strings(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("requests of the access-control table that openapi.json does not describe:\n%s", strings.Join(undocumented, "\n"))
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

// openAPIResponses returns an accesstest.Fixture.Response that checks every
// answer of the access-control suite against openapi.json: its status is
// one the operation documents (or covered by "default"), and a JSON body
// passes the documented schema of that status and content type.
func openAPIResponses(t *testing.T) func(*testing.T, accesstest.Request, accesstest.Caller, *http.Response, []byte) {
	doc := loadOpenAPI(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	// an event stream is checked as the string the description says
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.FileBodyDecoder)
	return func(t *testing.T, rq accesstest.Request, who accesstest.Caller, resp *http.Response, body []byte) {
		t.Helper()
		req := httptest.NewRequest(rq.Method, rq.Path, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			// a session id with raw '/' is served too (pathID), but an
			// OpenAPI path parameter is one segment: look up its escaped form
			if alt := escapedSessionPath(rq.Path); alt != rq.Path {
				req = httptest.NewRequest(rq.Method, alt, nil)
				route, params, err = router.FindRoute(req)
			}
		}
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

// conforming wraps h so that every answer it gives in a test is checked
// against openapi.json as openAPIResponses checks the access suite's:
// the status documented, the body passing its schema. Streams
// (text/event-stream) are checked as the strings they are documented as.
func conforming(t *testing.T, h http.Handler) http.Handler {
	check := openAPIResponses(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		resp := &http.Response{StatusCode: rec.status, Header: w.Header()}
		check(t, accesstest.Request{Method: r.Method, Path: r.URL.RequestURI()}, "test", resp, rec.body.Bytes())
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
