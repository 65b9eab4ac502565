package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every route treats its query alike: a single-valued parameter given
// twice, and a numeric one given empty, are a 400 naming it. Before,
// GET /v1/sessions?limit=1&limit=2 kept the first value silently and
// ?limit= meant the default there and on the searches, while
// /v1/workflows?limit= was a 400 (a walkthrough, 2026-11-30). The
// refusal comes before any handler, so routesOnly serves it.
func TestQueryParametersAreCheckedAlike(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	for q, name := range map[string]string{
		"/v1/sessions?limit=1&limit=2":                  "limit",
		"/v1/workflows?limit=1&limit=2":                 "limit",
		"/v1/sessions?limit=":                           "limit",
		"/v1/memories/search?query=tip&limit=":          "limit",
		"/v1/memories/search?query=tip&min_confidence=": "min_confidence",
		"/v1/graph/next?k=":                             "k",
		"/v1/memories/search?query=a&query=b":           "query",
	} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error string `json:"error"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || derr != nil || !strings.HasPrefix(e.Error, name+": ") {
			t.Errorf("%s: %d %q, want 400 naming %s", q, resp.StatusCode, e.Error, name)
		}
	}
}
