package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Every route that takes a ?scope= filter names, for a scope of a known
// kind, the character it refuses, as the entity routes and the MCP tools
// did; the list and search routes and the learned stream said only the
// forms (a walkthrough, 2026-12-06).
func TestScopeFiltersNameTheCharacter(t *testing.T) {
	_, srv := setup(t)
	for _, path := range []string{
		"/v1/memories/search?query=fare&", "/v1/patterns/search?query=fare&", "/v1/deadletters?", "/v1/sessions?", "/v1/workflows?",
		"/v1/learned/stream?follow=false&",
	} {
		resp, err := http.Get(srv.URL + path + "scope=project:%E6%9D%B1%E4%BA%AC")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Error string }
		_ = json.Unmarshal(b, &body)
		if resp.StatusCode != 400 || !strings.Contains(body.Error, "character '東' at byte 8 is not allowed") {
			t.Errorf("%s: %d %s, want a 400 naming the character", path, resp.StatusCode, b)
		}
	}
}
