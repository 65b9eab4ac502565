package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
)

// A query string that does not parse is a 400 naming the parameter on
// every route (the router checks it): r.URL.Query() drops such a
// parameter, so GET /v1/workflows?cursor=%zz (and ?%%%) answered 200 with
// the first page while ?cursor=zzz was a 400 naming cursor (found by an
// agent-runtime developer's walkthrough). Every operation of openapi.json
// documents the 400.
func TestUnparsableQueryIsA400(t *testing.T) {
	check := openAPIResponses(t)
	p, _ := setup(t)
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	t.Cleanup(srv.Close)
	get := func(uri string) (int, string) {
		code, m := call(t, srv.URL, "", "GET", uri, nil)
		s, _ := m["error"].(string)
		return code, s
	}
	for uri, name := range map[string]string{
		"/v1/workflows?cursor=%zz":         `"cursor"`,
		"/v1/workflows?limit=5&cursor=%zz": `"cursor"`,
		"/v1/workflows?%%%":                `"%%%"`,
		"/v1/workflows?cursor=a;b":         `"cursor"`,
		"/v1/workflows?cursor%zz=1":        `"cursor%zz"`,
	} {
		if code, msg := get(uri); code != http.StatusBadRequest || !strings.Contains(msg, name) {
			t.Errorf("GET %s: %d %q, want 400 naming %s", uri, code, msg, name)
		}
	}
	// parameter and reason, as every other parameter's 400 (it had only
	// error: a producer's walkthrough, 2026-12-06)
	if code, m := call(t, srv.URL, "", "GET", "/v1/sessions?cursor=%zz", nil); code != http.StatusBadRequest || m["parameter"] != "cursor" || !strings.Contains(fmt.Sprint(m["reason"]), `invalid URL escape "%zz"`) {
		t.Errorf("GET /v1/sessions?cursor=%%zz: %d %v, want 400 with parameter cursor and the reason", code, m)
	}
	if code, msg := get("/v1/workflows?cursor=a%20b&limit=5"); code == http.StatusBadRequest && strings.Contains(msg, "query parameter") {
		t.Errorf("a query that parses: %d %s", code, msg)
	}
	if t.Failed() {
		t.FailNow()
	}
	h := routesOnly().Handler()
	doc := loadOpenAPI(t)
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method := range doc.Paths.Value(path).Operations() {
			uri := pathParam.ReplaceAllString(path, "x") + "?cursor=%zz"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, uri, nil))
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "cursor") {
				t.Errorf("%s %s: %d %s, want 400 naming cursor", method, uri, rec.Code, rec.Body)
				continue
			}
			check(t, accesstest.Request{Method: method, Path: uri}, "test", rec.Result(), rec.Body.Bytes())
			n++
		}
	}
	if n < 40 {
		t.Fatalf("checked %d operations, want every one", n)
	}
}
