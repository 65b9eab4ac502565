package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
)

// TestGraphNextRefusesEmptyToolNames: GET /v1/graph/next?after=a,,b is a
// 400 naming after and the position of the empty name (found by a new
// user's walkthrough: it answered 200 with "after":["a","","b"]), and
// openapi.json refuses it as well. The refusal comes before the tool
// graph is read, so routesOnly serves it.
func TestGraphNextRefusesEmptyToolNames(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	check := openAPIRequests(t)
	for _, c := range []struct {
		after string
		pos   string
	}{{"a,,b", "position 1"}, {",a", "position 0"}, {"a,", "position 1"}, {",", "position 0"}} {
		uri := "/v1/graph/next?after=" + url.QueryEscape(c.after)
		resp, err := http.Get(srv.URL + uri)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error string `json:"error"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || derr != nil || !strings.HasPrefix(e.Error, "after: ") || !strings.Contains(e.Error, c.pos) {
			t.Errorf("GET %s: %d %q, want 400 naming after and %s", uri, resp.StatusCode, e.Error, c.pos)
		}
		if check("GET", uri, http.Header{}, nil) == nil {
			t.Errorf("GET %s: openapi.json accepts an after the route refuses", uri)
		}
	}
	for _, ok := range []string{"/v1/graph/next?after=", "/v1/graph/next?after=a,b", "/v1/graph/next"} {
		if err := check("GET", ok, http.Header{}, nil); err != nil {
			t.Errorf("GET %s: openapi.json refuses it: %v", ok, err)
		}
	}
}

// GET /v1/graph/next bounds after= as next_tool does (at most
// mcpserver.MaxNextAfter tools) and refuses a failed position given twice;
// it took 5,000 tools and echoed them all, and failed=0,0 silently (a
// walkthrough's finding).
func TestGraphNextBoundsAfterAndFailed(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	for _, c := range []struct{ query, want string }{
		{"after=" + strings.TrimSuffix(strings.Repeat("get_user_details,", mcpserver.MaxNextAfter+1), ","), "after: 257 tools, at most 256"},
		{"after=a,b&failed=0,0", "failed: position 0 is given twice"},
	} {
		resp, err := http.Get(srv.URL + "/v1/graph/next?" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error string `json:"error"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || derr != nil || !strings.HasPrefix(e.Error, c.want) {
			t.Errorf("GET /v1/graph/next?%.60s…: %d %q, want 400 %q", c.query, resp.StatusCode, e.Error, c.want)
		}
	}
}
