package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A member's 401 to this member's forward (another member_secret or tokens
// file) and its 404 of no route (reached at a wrong URL) are no answer
// about the data: the member did not answer, a 503 naming it. Before,
// they were relayed: a valid token read "401 … a client does not send
// these headers", and a member's data "not found" (an SRE's walkthrough,
// 2026-11-30). An entity's 404 is an answer.
func TestForwardAnswersThatAreNone(t *testing.T) {
	noRoute := httptest.NewRecorder()
	(&jsonRouter{mux: http.NewServeMux()}).notFound(noRoute, httptest.NewRequest("GET", "/chronicle/v1/sessions", nil))
	for _, c := range []struct {
		name   string
		a      memberAnswer
		failed bool
	}{
		{"401 to the forward", memberAnswer{code: 401, header: http.Header{}}, true},
		{"404 of no route", memberAnswer{code: 404, header: noRoute.Header()}, true},
		{"404 of an entity", memberAnswer{code: 404, header: http.Header{}}, false},
		{"403 of a scope", memberAnswer{code: 403, header: http.Header{}}, false},
		{"200", memberAnswer{code: 200, header: http.Header{}}, false},
		{"503", memberAnswer{code: 503, header: http.Header{}}, true},
	} {
		if got := c.a.failed(); got != c.failed {
			t.Errorf("%s: failed %v, want %v", c.name, got, c.failed)
		}
	}
}
