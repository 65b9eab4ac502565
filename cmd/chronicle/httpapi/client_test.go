package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// TestClientErrors: the service's error answers become the search
// sentinels the MCP tools map to tool errors, each said once; a 403 (a
// scope the token may not write) is not a missing memory.
func TestClientErrors(t *testing.T) {
	cases := []struct {
		status   int
		body     string
		sentinel error // nil: neither ErrNotFound nor ErrInvalid
		want     string
	}{
		{404, `{"error":"memory not found: m1"}`, search.ErrNotFound, "memory not found: m1"},
		{404, "404 page not found\n", search.ErrNotFound, "memory not found: 404 Not Found"},
		{404, `{"error":"session \"s1\" not found"}`, search.ErrNotFound, `session "s1" not found`},
		{400, `{"error":"invalid argument: title: required, at most 50 characters"}`, search.ErrInvalid, "invalid argument: title: required, at most 50 characters"},
		{400, `{"error":"limit: \"x\" is not an integer"}`, search.ErrInvalid, `invalid argument: limit: "x" is not an integer`},
		// a reused idempotency key: the caller's argument (it named the
		// internal request over MCP: a walkthrough, 2026-11-30)
		{422, `{"error":"Idempotency-Key: idempotency key already used for another recording: k1"}`, search.ErrKeyReused, "invalid argument: idempotency_key (the Idempotency-Key header): idempotency key already used for another recording: k1"},
		{403, `{"error":"scope: this token may not write project:a"}`, nil, "chronicle POST /v1/memories: 403 Forbidden: scope: this token may not write project:a"},
		{401, `{"error":"access: missing or unknown bearer token"}`, nil, "chronicle POST /v1/memories: 401 Unauthorized: access: missing or unknown bearer token"},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		_, err := (&httpapi.Client{Base: srv.URL}).Record(context.Background(), search.Record{Title: "t", Scope: "project:a"})
		srv.Close()
		switch {
		case err == nil:
			t.Errorf("%d %s: no error", c.status, c.body)
		case err.Error() != c.want:
			t.Errorf("%d %s: error %q, want %q", c.status, c.body, err, c.want)
		case c.sentinel != nil && !errors.Is(err, c.sentinel):
			t.Errorf("%d %s: %q is not %v", c.status, c.body, err, c.sentinel)
		case c.sentinel == nil && (errors.Is(err, search.ErrNotFound) || errors.Is(err, search.ErrInvalid)):
			t.Errorf("%d %s: %q wraps a search sentinel", c.status, c.body, err)
		case strings.Count(err.Error(), "memory not found") > 1:
			t.Errorf("%d %s: %q says not found twice", c.status, c.body, err)
		}
	}
}
