package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every route treats its query alike: a single-valued parameter given
// twice, and a numeric one given empty, are a 400 naming it. Before,
// GET /v1/sessions?limit=1&limit=2 kept the first value silently and
// ?limit= meant the default there and on the searches, while
// /v1/workflows?limit= was a 400 (a walkthrough, 2026-11-30); the learned
// stream refused repeats on its own (a new user's walkthrough:
// ?follow=FALSE&follow=true kept the first value silently), and its
// repeated types= still all count. The refusal comes before any handler,
// so routesOnly serves it.
func TestQueryParametersAreCheckedAlike(t *testing.T) {
	srv := httptest.NewServer(conforming(t, routesOnly().Handler()))
	defer srv.Close()
	for _, c := range []struct{ path, name, says string }{
		{"/v1/sessions?limit=1&limit=2", "limit", "2 times"},
		{"/v1/workflows?limit=1&limit=2", "limit", "2 times"},
		{"/v1/memories/search?query=a&query=b", "query", "2 times"},
		{"/v1/learned/stream?follow=FALSE&follow=true", "follow", "2 times"},
		{"/v1/learned/stream?from=start&from=end", "from", "2 times"},
		{"/v1/learned/stream?scope=project:a&scope=project:b", "scope", "2 times"},
		{"/v1/learned/stream?after=0:0&after=0:1", "after", "2 times"},
		{"/v1/learned/stream?follow=false&types=memory.created.v1&follow=false", "follow", "2 times"},
		{"/v1/sessions?limit=", "limit", "empty"},
		{"/v1/memories/search?query=tip&limit=", "limit", "empty"},
		{"/v1/memories/search?query=tip&min_confidence=", "min_confidence", "empty"},
		{"/v1/graph/next?k=", "k", "empty"},
	} {
		var e struct {
			Error string `json:"error"`
		}
		if code := get(t, srv, c.path, &e); code != http.StatusBadRequest || !strings.HasPrefix(e.Error, c.name+": ") || !strings.Contains(e.Error, c.says) {
			t.Errorf("%s: %d %q, want 400 naming %s (%s)", c.path, code, e.Error, c.name, c.says)
		}
	}
}
