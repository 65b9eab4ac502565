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
		code, msg, derr := getError(t, srv.URL+uri)
		if code != http.StatusBadRequest || derr != nil || !strings.HasPrefix(msg, "after: ") || !strings.Contains(msg, c.pos) {
			t.Errorf("GET %s: %d %q, want 400 naming after and %s", uri, code, msg, c.pos)
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
		code, msg, derr := getError(t, srv.URL+"/v1/graph/next?"+c.query)
		if code != http.StatusBadRequest || derr != nil || !strings.HasPrefix(msg, c.want) {
			t.Errorf("GET /v1/graph/next?%.60s…: %d %q, want 400 %q", c.query, code, msg, c.want)
		}
	}
}

// getError GETs u and returns the status and the answer's error member,
// with the error of decoding the answer.
func getError(t *testing.T, u string) (int, string, error) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	derr := json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error, derr
}
