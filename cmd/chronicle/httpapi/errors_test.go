package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// eventError is the documented 400 body of POST /v1/events; the pointers
// tell a field that is absent from one that is zero.
type eventError struct {
	Error   *string `json:"error"`
	Index   *int    `json:"index"`
	Pointer *string `json:"pointer"`
	Reason  *string `json:"reason"`
}

// TestPostEventsBadInputFields: every 400 of POST /v1/events has the
// documented {"error", "index", "pointer", "reason"}, with the pointer
// naming the field (binary mode's header ce-id is the attribute /id; "/"
// for a body that is not an event or an array of them), index the event's
// position (0: a single event, -1: the body as a whole). The answers also
// pass openapi.json, whose 400 of this route requires the four fields
// (conforming). Before, the body's and the headers' errors were
// {"error"} only. It also pins items found with them: a data-only body
// sent as application/json is reported as lacking the required
// attributes, not as a badly named extension, and binary mode judges a
// ce-datacontenttype header as structured mode judges datacontenttype.
func TestPostEventsBadInputFields(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	data := `{"memory_id":"m1","signal":"explicit_feedback","positive":true}`
	event := func(extra string) string {
		return `{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1"` + extra + `,"data":` + data + `}`
	}
	bin := map[string]string{"ce-specversion": "1.0", "ce-id": "b1", "ce-source": "test", "ce-type": "memory.feedback.v1"}
	without := func(k string) map[string]string {
		m := map[string]string{}
		for a, b := range bin {
			if a != k {
				m[a] = b
			}
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := without("")
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name     string
		ct       string
		headers  map[string]string
		body     string
		index    int
		pointer  string
		contains []string // in error and reason
	}{
		{"binary without ce-id", "application/json", without("ce-id"), data, 0, "/id", []string{"ce-id is missing"}},
		{"binary without ce-type", "application/json", without("ce-type"), data, 0, "/type", []string{"ce-type is missing"}},
		{"binary body not JSON", "application/json", bin, `{"memory_id":`, 0, "/data", []string{"not valid JSON"}},
		{"binary empty body", "application/json", bin, "", 0, "/data", []string{"empty"}},
		{"binary ce-data header", "application/json", with("ce-data", "x"), data, 0, "/data", []string{"data is the body"}},
		{"truncated JSON", "application/json", nil, `{"specversion":`, -1, "/", []string{"not valid JSON"}},
		{"empty body", "application/json", nil, "", -1, "/", []string{"empty body"}},
		{"a number", "application/json", nil, `42`, -1, "/", []string{"JSON object"}},
		{"object as batch", "application/cloudevents-batch+json", nil, event(""), -1, "/", []string{"array"}},
		{"array as structured", "application/cloudevents+json", nil, "[" + event("") + "]", -1, "/", []string{"one event"}},
		{"second event of a batch", "application/cloudevents-batch+json", nil, "[" + event("") + "," + event(`,"time":"yesterday"`) + "]", 1, "/time", nil},
		// defect 4: data sent as application/json with the ce- headers
		// forgotten lacks the required attributes; its keys are data
		{"data-only body", "application/json", nil, `{"original_task":"t","success_criteria":[]}`, 0, "/", []string{"missing properties", "specversion", "id", "source", "type"}},
		// a real event with a badly named extension keeps the naming error
		{"bad extension name", "application/cloudevents+json", nil, event(`,"Trace_Parent":"x"`), 0, "/Trace_Parent", []string{"naming rule"}},
		// item (a): binary mode judges ce-datacontenttype like structured mode
		{"binary ce-datacontenttype text/plain", "application/json", with("ce-datacontenttype", "text/plain"), data, 0, "/datacontenttype", []string{"application/json"}},
		{"structured datacontenttype text/plain", "application/cloudevents+json", nil, event(`,"datacontenttype":"text/plain"`), 0, "/datacontenttype", nil},
	} {
		code, raw := postAs(t, srv.URL, c.ct, []byte(c.body), c.headers)
		var e eventError
		if err := json.Unmarshal([]byte(raw), &e); err != nil || code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400 JSON", c.name, code, raw)
			continue
		}
		if e.Error == nil || e.Index == nil || e.Pointer == nil || e.Reason == nil || *e.Reason == "" {
			t.Errorf("%s: %s lacks one of error, index, pointer, reason", c.name, raw)
			continue
		}
		if *e.Index != c.index || *e.Pointer != c.pointer {
			t.Errorf("%s: index %d pointer %q, want %d %q (%s)", c.name, *e.Index, *e.Pointer, c.index, c.pointer, raw)
		}
		for _, w := range c.contains {
			if !strings.Contains(*e.Error, w) || !strings.Contains(*e.Reason, w) {
				t.Errorf("%s: error %q / reason %q, want both naming %q", c.name, *e.Error, *e.Reason, w)
			}
		}
		if strings.Contains(c.name, "data-only") && strings.Contains(raw, "naming rule") {
			t.Errorf("%s: %s blames the naming rule", c.name, raw)
		}
		if c.headers["ce-datacontenttype"] != "" && !strings.Contains(*e.Error, "header ce-datacontenttype") {
			t.Errorf("%s: %q does not name the header", c.name, *e.Error)
		}
		if c.headers != nil && !strings.HasPrefix(*e.Error, "binary mode") {
			t.Errorf("%s: %q does not say binary mode", c.name, *e.Error)
		}
	}
}

// TestSessionListCursor: a cursor that is not a next_cursor (a session
// key, <scope>/<id>) is a 400 naming cursor and the reason; it used to
// list from a meaningless position with 200. openapi.json refuses it too.
func TestSessionListCursor(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	for cursor, reason := range map[string]string{
		"garbage":         "no '/'",
		"galaxy:x/s-1":    "not a scope",
		"project:a/":      "no '/'",
		"project:a/-s":    "session id",
		"project:a/s%20x": "session id",
	} {
		var e struct{ Error string }
		code := get(t, srv, "/v1/sessions?cursor="+cursor, &e)
		if code != http.StatusBadRequest || !strings.HasPrefix(e.Error, "cursor: ") || !strings.Contains(e.Error, reason) {
			t.Errorf("cursor %q: %d %q, want 400 naming cursor and %q", cursor, code, e.Error, reason)
		}
	}

	// a real next_cursor still pages, in key order (scope, then id)
	p, live := setup(t)
	for i := 0; i < 2; i++ {
		body, _ := sessionJSON(t, i)
		if code, m := post(t, live, body); code != http.StatusAccepted {
			t.Fatalf("POST: %d %v", code, m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	type page struct {
		Sessions []struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
		} `json:"sessions"`
		NextCursor string `json:"next_cursor"`
	}
	var first, second page
	if code := get(t, live, "/v1/sessions?limit=1", &first); code != 200 || len(first.Sessions) != 1 || first.NextCursor == "" {
		t.Fatalf("first page: %d %+v", code, first)
	}
	if code := get(t, live, "/v1/sessions?limit=1&cursor="+url.QueryEscape(first.NextCursor), &second); code != 200 || len(second.Sessions) != 1 {
		t.Fatalf("second page after %q: %d %+v", first.NextCursor, code, second)
	}
	a := events.EntityKey(first.Sessions[0].Scope, first.Sessions[0].ID)
	b := events.EntityKey(second.Sessions[0].Scope, second.Sessions[0].ID)
	if a != first.NextCursor || !(a < b) {
		t.Fatalf("pages %q then %q (cursor %q): not in key order", a, b, first.NextCursor)
	}
}

// TestRouterErrorsAreJSON: what no route serves is a JSON error with
// Content-Type application/json: 405 with Allow for a method the path has
// no route for, 404 for an unknown path, and no redirect for the root of
// an {id} subtree (PUT /v1/memories: 405 with Allow naming GET and POST
// and the routes under /v1/memories; it used to redirect to /v1/memories/,
// which answered 400 "memory id: empty"; GET /v1/memories, a 405 until
// it listed the memories, 2026-12-07). Registered routes answer as before.
func TestRouterErrorsAreJSON(t *testing.T) {
	srv := httptest.NewServer(routesOnly().Handler())
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
		contains     []string
	}{
		{"GET", "/v1/events", 405, "POST", []string{"GET", "/v1/events", "POST /v1/events"}},
		{"PUT", "/v1/memories", 405, "GET, HEAD, POST", []string{"GET /v1/memories/search", "GET /v1/memories/{id}", "POST /v1/memories"}},
		{"DELETE", "/v1/memories", 405, "GET, HEAD, POST", []string{"DELETE"}},
		{"DELETE", "/v1/patterns/p1", 405, "GET, HEAD", []string{"GET /v1/patterns/{id}/history"}},
		{"POST", "/v1/sessions", 405, "GET, HEAD", []string{"GET /v1/sessions"}},
		{"DELETE", "/v1/workflows", 405, "GET, HEAD", []string{"GET /v1/workflows", "GET /v1/workflows/{id}", "POST /v1/workflows/suggest"}},
		// the documented routes, not the subtree patterns that serve them
		{"DELETE", "/v1/memories/m1", 405, "GET, HEAD", []string{"POST /v1/memories/{id}/feedback", "GET /v1/memories/{id}/history"}},
		{"PUT", "/v1/searches/s1", 405, "GET, HEAD", []string{"POST /v1/searches/{id}/resume", "GET /v1/searches/{id}/panel"}},
		// Allow lists what routes on the exact path, not every method of
		// an {id...} subtree pattern that matches it (found by a new
		// user's walkthrough: DELETE /v1/sessions/s1 listed POST, which is
		// a 404 there; GET /v1/workflows/wf1/updates was a 404)
		{"DELETE", "/v1/sessions/s1", 405, "GET, HEAD", []string{"POST /v1/sessions/{id}/improve"}},
		{"POST", "/v1/sessions/s1", 405, "GET, HEAD", []string{"GET /v1/sessions/{id}"}},
		{"PUT", "/v1/sessions/s1/improve", 405, "POST", nil},
		{"GET", "/v1/workflows/wf1/updates", 405, "POST", []string{"POST /v1/workflows/{id}/updates"}},
		{"GET", "/v1/workflows/wf1/resume", 405, "POST", nil},
		{"GET", "/v1/memories/m1/feedback", 405, "POST", nil},
		{"GET", "/v1/searches/s1/resume", 405, "POST", nil},
		{"DELETE", "/v1/workflows/wf1/checkpoints", 405, "GET, HEAD, POST", nil},
		{"POST", "/v1/memories/m1", 405, "GET, HEAD", nil},
		{"GET", "/v1/workflows/suggest", 405, "POST", nil},
		{"DELETE", "/v1/workflows/wf1/nope", 404, "", nil},
		{"GET", "/nope", 404, "", []string{"GET /nope", "GET /openapi.json"}},
		{"GET", "/v1/nope/x", 404, "", []string{"GET /openapi.json"}},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e map[string]any
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		msg, _ := e["error"].(string)
		if resp.StatusCode != c.code || derr != nil || msg == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s %v %v, want %d JSON {error}", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), e, derr, c.code)
			continue
		}
		if got := resp.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		for _, w := range c.contains {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %s: %q does not name %q", c.method, c.path, msg, w)
			}
		}
	}
	// registered routes as before: a served route, a trailing-slash {id}
	// (the handler's own 400), and the redirect of an unclean path
	for _, c := range []struct {
		path string
		code int
	}{{"/openapi.json", 200}, {"/v1/memories/", 400}, {"/v1//whoami", 307}} {
		resp, err := client.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET %s: %d, want %d", c.path, resp.StatusCode, c.code)
		}
	}
}

// TestReadOnlyAllowIsExact: on a read-only server (chronicle inspect)
// the Allow of a 405 is "GET, HEAD" only where a GET route serves the
// exact path; a write-only path under an {id...} subtree has an empty
// Allow, as README "chronicle inspect" documents (found by a new user's
// walkthrough: POST /v1/workflows/wf1/updates answered Allow: GET, HEAD
// though GET there is a 404).
func TestReadOnlyAllowIsExact(t *testing.T) {
	s := routesOnly()
	s.ReadOnly = true
	h := s.Handler()
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"POST", "/v1/workflows/wf1/updates", 405, ""},
		{"POST", "/v1/workflows/wf1/resume", 405, ""},
		{"POST", "/v1/workflows/wf1/fork", 405, ""},
		{"POST", "/v1/workflows/wf1/complete", 405, ""},
		{"POST", "/v1/workflows/wf1/commands", 405, ""},
		{"POST", "/v1/workflows/wf1/decisions", 405, ""},
		{"POST", "/v1/workflows/wf1/decisions/d1", 405, ""},
		{"POST", "/v1/memories/x/feedback", 405, ""},
		{"POST", "/v1/sessions/s1/improve", 405, ""},
		{"POST", "/v1/searches/srch1/resume", 405, ""},
		{"POST", "/v1/workflows/suggest", 405, ""},
		// where a GET route serves the path
		{"POST", "/v1/workflows/wf1/checkpoints", 405, "GET, HEAD"},
		{"POST", "/v1/workflows/wf1", 405, "GET, HEAD"},
		{"PUT", "/v1/memories/x", 405, "GET, HEAD"},
		{"DELETE", "/v1/sessions/s1", 405, "GET, HEAD"},
		{"POST", "/v1/sessions", 405, "GET, HEAD"},
		// no method routes: 404
		{"DELETE", "/v1/sessions/s1/improve", 404, ""},
		{"DELETE", "/v1/workflows/wf1/updates", 404, ""},
		{"POST", "/mcp", 405, ""},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		allow, has := rec.Header()["Allow"]
		if rec.Code != c.code || strings.Join(allow, ", ") != c.allow || (c.code == 405) != has {
			t.Errorf("read-only %s %s: %d Allow %q (present %v) %s, want %d with Allow %q", c.method, c.path, rec.Code, allow, has, rec.Body, c.code, c.allow)
		}
	}
}

// An empty batch is valid in a request (CloudEvents JSON Batch Format
// §4.3: `[]` is "typically used in a response, but also valid in a
// request"): 202 with no ids, in batched mode and as application/json,
// which takes the same arrays. Before, both were a 400 "empty array".
func TestEmptyBatchIsAccepted(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	for _, ct := range []string{"application/cloudevents-batch+json", "application/json"} {
		code, raw := postAs(t, srv.URL, ct, []byte(" [ ] "), nil)
		var got struct {
			IDs *[]string `json:"ids"`
		}
		if err := json.Unmarshal([]byte(raw), &got); err != nil || code != http.StatusAccepted || got.IDs == nil || len(*got.IDs) != 0 {
			t.Errorf("%s: %d %s, want 202 {\"ids\":[]}", ct, code, raw)
		}
	}
	// structured mode still takes one event only
	if code, raw := postAs(t, srv.URL, "application/cloudevents+json", []byte(`[]`), nil); code != http.StatusBadRequest {
		t.Errorf("structured []: %d %s, want 400", code, raw)
	}
}

// /mcp is stateless: GET (the server's own stream) and DELETE (ending a
// session) are 405 with Allow: POST, which the MCP Streamable HTTP
// transport allows, and openapi.json says so. It documented a 200 for
// both, which no request ever got (a subscriber walkthrough).
func TestMCPGetAndDeleteAre405(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	doc := loadOpenAPI(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, srv.URL+"/mcp", nil)
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s /mcp: %d Allow %q, want 405 Allow POST", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
		op := doc.Paths.Find("/mcp").GetOperation(method)
		if op == nil || op.Responses.Value("200") != nil || op.Responses.Value("405") == nil {
			t.Errorf("openapi.json %s /mcp: documents a 200 or no 405", method)
		}
	}
}
