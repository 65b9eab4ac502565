package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A refused query parameter is answered with its name and the reason as
// members, parameter and reason, besides the error text, on every route
// that takes one: a client tells which parameter and why without parsing
// the text, as pointer and reason name a body's member. Before, the list
// routes (sessions, workflows, reasoning, dead letters, searches, the
// memory search, the tool graph, the learned stream) answered the text
// alone, while the history routes added a reason (an OpenAPI
// walkthrough). A ?scope= the token may not read is a 403 of the same
// shape.
func TestRefusedQueryParametersAreNamed(t *testing.T) {
	_, _, base := scopedServer(t)
	cases := []struct {
		path  string
		code  int
		param string
	}{
		{"/v1/sessions?limit=0", 400, "limit"},
		{"/v1/sessions?scope=proj", 400, "scope"},
		{"/v1/sessions?cursor=x", 400, "cursor"},
		{"/v1/sessions?scope=project:b", 403, "scope"},
		{"/v1/learned/stream?scope=project:b", 403, "scope"},
		{"/v1/workflows?limit=501", 400, "limit"},
		{"/v1/workflows?cursor=nope", 400, "cursor"},
		{"/v1/workflows?scope=project:b", 403, "scope"},
		{"/v1/reasoning?limit=abc", 400, "limit"},
		{"/v1/deadletters?limit=-1", 400, "limit"},
		{"/v1/deadletters?type=", 400, "type"},
		{"/v1/deadletters?cursor=%7E", 400, "cursor"},
		{"/v1/searches?limit=0", 400, "limit"},
		{"/v1/memories/search?query=x&limit=0", 400, "limit"},
		{"/v1/memories/search?query=x&min_confidence=high", 400, "min_confidence"},
		{"/v1/memories/search?query=x&outcome=maybe", 400, "outcome"},
		{"/v1/memories/search?limit=3", 400, "query"},
		{"/v1/memories/search?query=x&session_id=bad//id", 400, "session_id"},
		{"/v1/memories/search?query=x&scope=project:b", 403, "scope"},
		{"/v1/graph/next?after=a&k=0", 400, "k"},
		{"/v1/graph/next?after=a&failed=3", 400, "failed"},
		{"/v1/learned/stream?from=middle", 400, "from"},
		{"/v1/graph/path?to=book_reservation", 400, "from"},
		{"/v1/graph/path?from=get_user_details", 400, "to"},
		{"/v1/learned/stream?follow=maybe", 400, "follow"},
		// the checks every route shares (queryShape): a repeated
		// parameter and an empty number had no parameter nor reason
		{"/v1/sessions?limit=1&limit=2", 400, "limit"},
		{"/v1/memories/search?query=x&query=y", 400, "query"},
		{"/v1/workflows?limit=", 400, "limit"},
		{"/v1/whoami?_=1&_=2", 400, "_"},
	}
	for _, c := range cases {
		code, m := call(t, base, "tok-a", "GET", c.path, nil)
		reason, _ := m["reason"].(string)
		text, _ := m["error"].(string)
		if code != c.code || m["parameter"] != c.param || reason == "" || !strings.HasSuffix(text, c.param+": "+reason) {
			t.Errorf("GET %s: %d %v, want %d with parameter %q, a reason and an error ending %q", c.path, code, m, c.code, c.param, c.param+": <reason>")
		}
		if strings.Contains(text, "\n") {
			t.Errorf("GET %s: error %q spans lines", c.path, text)
		}
	}
}

// POST /v1/events' 400 for a query every route refuses (a parameter given
// twice) has every member of its description (EventError): index -1 and
// pointer "/" (the request as a whole), the reason, and the parameter.
// Before, it had the error text alone (a mutation test).
func TestEventsRepeatedQueryParameter(t *testing.T) {
	_, _, base := scopedServer(t)
	body, _ := sessionJSON(t, 0)
	code, m := call(t, base, "tok-admin", "POST", "/v1/events?x=1&x=2", json.RawMessage(body))
	if code != http.StatusBadRequest || m["index"] != float64(-1) || m["pointer"] != "/" || m["parameter"] != "x" || m["reason"] == nil || m["reason"] == "" {
		t.Fatalf("POST /v1/events?x=1&x=2: %d %v", code, m)
	}
}

// A query parameter the operation does not take is a 400 naming it and the
// parameters the operation takes, on every /v1/ route: before, it was
// ignored, so a typo changed the answer without a word (an analyst's
// walkthrough, 2026-12-06: ?scop=project:x answered the memories of every
// scope the token reads, ?limt=1 a page of the default size, ?q= "query:
// required"). A cache-buster's ?_= is left alone, and so are the routes
// outside /v1/.
func TestUnknownQueryParameterIsNamed(t *testing.T) {
	_, _, base := scopedServer(t)
	body, _ := sessionJSON(t, 0)
	for _, c := range []struct {
		method, path string
		body         any
		param, takes string // takes: a part of the reason
	}{
		{"GET", "/v1/memories/search?query=x&scop=project:a", nil, "scop", "GET /v1/memories/search, which takes query, scope, outcome, limit"},
		{"GET", "/v1/memories/search?q=x", nil, "q", "takes query, scope"},
		{"GET", "/v1/sessions?limt=1", nil, "limt", "GET /v1/sessions, which takes outcome, limit, cursor, scope"},
		{"GET", "/v1/sessions/s-1?format=json", nil, "format", "GET /v1/sessions/{id}, which takes scope"},
		{"GET", "/v1/whoami?verbose=1", nil, "verbose", "GET /v1/whoami, which takes none"},
		{"POST", "/v1/events?dry_run=true", json.RawMessage(body), "dry_run", "POST /v1/events, which takes none"},
	} {
		code, m := call(t, base, "tok-a", c.method, c.path, c.body)
		reason, _ := m["reason"].(string)
		if code != http.StatusBadRequest || m["parameter"] != c.param || !strings.Contains(reason, "not a query parameter of ") || !strings.Contains(reason, c.takes) {
			t.Errorf("%s %s: %d %v, want 400 naming %q, saying it is not a parameter and %q", c.method, c.path, code, m, c.param, c.takes)
		}
		if c.path[:10] == "/v1/events" && (m["index"] != float64(-1) || m["pointer"] != "/") {
			t.Errorf("POST %s: %v, want index -1 and pointer / as every 400 of /v1/events", c.path, m)
		}
	}
	for _, path := range []string{"/v1/sessions?_=1733500000000", "/v1/memories/search?query=x&_=1", "/healthz?probe=k8s", "/openapi.json?v=3"} {
		if code, m := call(t, base, "tok-a", "GET", path, nil); code != http.StatusOK {
			t.Errorf("GET %s: %d %v, want 200 (left alone)", path, code, m)
		}
	}
}
