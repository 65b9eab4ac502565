package httpapi_test

import (
	"bytes"
	"net/url"
	"slices"
	"testing"
	"time"
)

// TestToolSearchScopeFilter: GET /v1/tools/search's scope keeps the tools
// of the tool graphs it names (one scope's, or every scope's of a kind),
// as the README promises. Before, the Tool documents' own scope (org:*)
// was filtered: scope=project:<id> and scope=project found nothing and
// scope=org everything (found by a new user's walkthrough).
func TestToolSearchScopeFilter(t *testing.T) {
	p, _, base := scopedServer(t)
	a, _ := sessionIn(t, 0, "project:a", "A")
	b, _ := sessionIn(t, 0, "project:b", "B")
	for i := range b { // project:b calls a tool project:a never does
		b[i].Data = bytes.ReplaceAll(b[i].Data, []byte("get_user_details"), []byte("fetch_customer_dossier"))
	}
	if code, m := call(t, base, "tok-admin", "POST", "/v1/events", append(a, b...)); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	waitCaughtUp(t, p)
	search := func(scope string) []string {
		t.Helper()
		path := "/v1/tools/search?limit=20&min_confidence=0&query=" + url.QueryEscape("get user details fetch customer dossier")
		if scope != "" {
			path += "&scope=" + scope
		}
		code, m := call(t, base, "tok-admin", "GET", path, nil)
		if code != 200 {
			t.Fatalf("scope %q: %d %v", scope, code, m)
		}
		var out []string
		for _, h := range m["tools"].([]any) {
			out = append(out, h.(map[string]any)["id"].(string))
		}
		if int(m["total_found"].(float64)) < len(out) {
			t.Fatalf("scope %q: total_found %v below %d hits", scope, m["total_found"], len(out))
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(search(""), "fetch_customer_dossier") || !slices.Contains(search(""), "get_user_details") {
		if time.Now().After(deadline) {
			t.Fatalf("the tool collection did not fill: %v", search(""))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		scope      string
		has, lacks []string
	}{
		{"", []string{"get_user_details", "fetch_customer_dossier"}, nil},
		{"all", []string{"get_user_details", "fetch_customer_dossier"}, nil},
		{"project", []string{"get_user_details", "fetch_customer_dossier"}, nil},
		{"project:a", []string{"get_user_details"}, []string{"fetch_customer_dossier"}},
		{"project:b", []string{"fetch_customer_dossier"}, []string{"get_user_details"}},
		{"org", nil, []string{"get_user_details", "fetch_customer_dossier"}},
		{"team:x", nil, []string{"get_user_details", "fetch_customer_dossier"}},
	} {
		got := search(c.scope)
		for _, tool := range c.has {
			if !slices.Contains(got, tool) {
				t.Errorf("scope %q: %v lacks %s", c.scope, got, tool)
			}
		}
		for _, tool := range c.lacks {
			if slices.Contains(got, tool) {
				t.Errorf("scope %q: %v has %s", c.scope, got, tool)
			}
		}
		if (c.scope == "org" || c.scope == "team:x") && len(got) != 0 {
			t.Errorf("scope %q: no graph of it, yet %v", c.scope, got)
		}
	}
	// the hybrid re-ranking (context_tools) filters the same way
	code, m := call(t, base, "tok-admin", "GET", "/v1/tools/search?limit=20&min_confidence=0&scope=project:a&context_tools=get_user_details&query="+url.QueryEscape("fetch customer dossier"), nil)
	if code != 200 {
		t.Fatalf("hybrid: %d %v", code, m)
	}
	var hybrid []string
	for _, h := range m["tools"].([]any) {
		hybrid = append(hybrid, h.(map[string]any)["id"].(string))
	}
	if slices.Contains(hybrid, "fetch_customer_dossier") || !slices.Contains(hybrid, "get_user_details") {
		t.Fatalf("hybrid scope project:a: %v", hybrid)
	}
}
