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
