package mcpserver

import (
	"context"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// TestScopeArgumentsHaveAPattern: every tool's scope argument says in its
// schema the form the tool takes — one scope for memory_record,
// memory_feedback, pair_improvement, search_get and search_resume, a kind
// or one scope for memory_search, next_tool and memory_list (pattern_get
// and pattern_history take none) — and a value of another
// form is a tool error naming /scope, the pattern and what is wrong with
// the value (the character and its byte), as the HTTP routes say it.
// Before, five of the schemas said a bare string, memory_search's refusal
// named no character, and next_tool's, search_get's, search_resume's and
// pair_improvement's said "scope:" without the pointer (an MCP walkthrough,
// 2026-12-06).
func TestScopeArgumentsHaveAPattern(t *testing.T) {
	improvement := func(context.Context, Caller, string, string) (map[string]any, error) {
		return map[string]any{"status": "SUCCESS"}, nil
	}
	srv := httptest.NewServer(HTTPHandler(newFake(), Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken,
		Improvement: improvement, Searches: &fakeSearches{}, Graph: &fakeGraph{}, Reads: &fakeReads{}}))
	t.Cleanup(srv.Close)
	writer := connectToken(t, srv.URL, "writer")

	kinds := map[string]bool{"memory_search": true, "next_tool": true, "memory_list": true}
	// a pattern id is unique across scopes: GET /v1/patterns/{id} takes no
	// scope, nor do its tools
	noScope := map[string]bool{"pattern_get": true, "pattern_history": true}
	args := map[string]map[string]any{
		"memory_search":    {"query": "retry"},
		"memory_record":    {"title": "t", "description": "d", "content": "c", "outcome": "success"},
		"memory_feedback":  {"memory_id": "m1", "helpful": true},
		"pair_improvement": {"session_id": "s1"},
		"search_get":       {"search_id": "s1"},
		"search_resume":    {"search_id": "s1", "decision": "approve"},
		"next_tool":        {},
		"memory_list":      {},
		"pattern_get":      {"pattern_id": "p1"},
		"pattern_history":  {"pattern_id": "p1"},
	}
	res, err := writer.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(args) {
		t.Fatalf("%d tools listed, want %d", len(res.Tools), len(args))
	}
	for _, tool := range res.Tools {
		a, ok := args[tool.Name]
		if !ok {
			t.Errorf("tool %s is not covered", tool.Name)
			continue
		}
		if noScope[tool.Name] {
			if _, has := schemaOf(t, tool)["properties"].(map[string]any)["scope"]; has {
				t.Errorf("%s takes a scope, which its route does not", tool.Name)
			}
			continue
		}
		pattern, _ := prop(t, schemaOf(t, tool), "scope")["pattern"].(string)
		if pattern == "" {
			t.Errorf("%s: the scope argument's schema has no pattern", tool.Name)
			continue
		}
		re := regexp.MustCompile(pattern)
		if !re.MatchString("project:a") || re.MatchString("project:東京") || re.MatchString("proj:a") || re.MatchString("project:") {
			t.Errorf("%s: scope pattern %s does not say what the tool takes", tool.Name, pattern)
		}
		if re.MatchString("team") != kinds[tool.Name] {
			t.Errorf("%s: scope pattern %s takes a kind: %v, want %v", tool.Name, pattern, re.MatchString("team"), kinds[tool.Name])
		}
		call := map[string]any{"scope": "project:東京"}
		for k, v := range a {
			call[k] = v
		}
		form := `"project:東京" is not project:<id>, team:<id> or org:<id>`
		if kinds[tool.Name] {
			form = `"project:東京" is not a kind (project, team, org, all) or a scope (project:<id>, team:<id>, org:<id>)`
		}
		mcptest.WantToolError(t, mcptest.Call(t, writer, tool.Name, call),
			"invalid argument: /scope: pattern: "+form+": character '東' at byte 8 is not allowed")
	}
}
