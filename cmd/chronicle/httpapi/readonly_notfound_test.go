package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// A session's 404 points to the routes that can find it: GET
// /v1/sessions/{id}/events on serve, not on inspect, where that route is a
// 503 (inspect reads no log; its 404 pointed there: a walkthrough,
// 2026-12-06).
func TestSessionNotFoundHintIsServedHere(t *testing.T) {
	p, srv := setup(t)
	ro := httptest.NewServer((&httpapi.Server{P: p, ReadOnly: true}).Handler())
	defer ro.Close()
	for _, c := range []struct {
		base   string
		events bool
	}{{srv.URL, true}, {ro.URL, false}} {
		code, m := call(t, c.base, "", "GET", "/v1/sessions/s-nowhere", nil)
		msg := fmt.Sprint(m["error"])
		if code != 404 || strings.Contains(msg, "/v1/sessions/{id}/events") != c.events || !strings.Contains(msg, "GET /v1/deadletters") {
			t.Errorf("read-only %v: %d %s, want a 404 that names the events route: %v", !c.events, code, msg, c.events)
		}
	}
}
