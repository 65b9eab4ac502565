package mcpserver

import (
	"strings"
	"testing"
)

type fakeRefusal struct {
	code   int
	detail string
}

func (f fakeRefusal) Error() string {
	return "chronicle GET /v1/memories/search?query=secret&scope=project%3Aother: 403 Forbidden: " + f.detail
}
func (f fakeRefusal) Refusal() (int, string) { return f.code, f.detail }

// A backend's 4xx is a tool error in the service's words, without the
// request's URL, as /mcp answers the same cause; a 5xx keeps the whole
// text (before, stdio's tool errors held the URL with its query: a
// subscriber walkthrough).
func TestToolErrorOfARefusal(t *testing.T) {
	err := toolError("memory_search", fakeRefusal{403, "scope: this caller may not read project:other"})
	if err.Error() != "memory_search: scope: this caller may not read project:other" {
		t.Fatalf("403: %q", err)
	}
	err = toolError("memory_search", fakeRefusal{502, "bad gateway"})
	if !strings.HasPrefix(err.Error(), "memory_search failed: chronicle GET") {
		t.Fatalf("502: %q", err)
	}
}
