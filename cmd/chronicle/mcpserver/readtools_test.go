package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// fakeReads answers memory_list, pattern_get and pattern_history as the
// routes do for a caller: one pattern, p1, in project:a (another scope's
// is not found), and a memory list that echoes its arguments; it records
// every call.
type fakeReads struct {
	mu    sync.Mutex
	calls []string
	last  Caller
}

func (f *fakeReads) record(c Caller, call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.last = c
}

func (f *fakeReads) ncalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeReads) MemoryList(_ context.Context, c Caller, scope string, limit int, cursor string) (map[string]any, error) {
	f.record(c, fmt.Sprintf("list %q %d %q", scope, limit, cursor))
	if scope != "" && c.readable() != nil && scope != "project" && !c.readable()(scope) {
		return nil, fmt.Errorf("scope: this token may not read %s", scope)
	}
	return map[string]any{"memories": []any{map[string]any{"id": "m1", "scope": "project:a"}}, "next_cursor": "project:a/m1"}, nil
}

func (f *fakeReads) pattern(c Caller, id string) error {
	if id != "p1" || (c.readable() != nil && !c.readable()("project:a")) {
		return fmt.Errorf("%w: pattern %q", search.ErrNotFound, id)
	}
	return nil
}

func (f *fakeReads) PatternGet(_ context.Context, c Caller, id string) (map[string]any, error) {
	f.record(c, "get "+id)
	if err := f.pattern(c, id); err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "scope": "project:a", "session_count": 1, "succeeded_count": 1, "confidence": 2.0 / 3}, nil
}

func (f *fakeReads) PatternHistory(_ context.Context, c Caller, id string, limit int, cursor string) (map[string]any, error) {
	f.record(c, fmt.Sprintf("history %s %d %q", id, limit, cursor))
	if err := f.pattern(c, id); err != nil {
		return nil, err
	}
	return map[string]any{"pattern_id": id, "records": []any{}, "record_count": 0, "next_cursor": ""}, nil
}

// memory_list, pattern_get and pattern_history are listed read-only when
// Options.Reads is set and reach it with the request's caller and their
// arguments (memory_list's limit defaulting to the route's 50); a caller
// that reads no scope is refused before the backend, as the other read
// tools refuse it, another scope's pattern is not found, and arguments
// the routes refuse are tool errors naming them.
func TestReadTools(t *testing.T) {
	fake := &fakeReads{}
	srv := httptest.NewServer(HTTPHandler(newFake(), Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken, Reads: fake}))
	t.Cleanup(srv.Close)
	reader, writer, writeOnly := connectToken(t, srv.URL, "reader"), connectToken(t, srv.URL, "writer"), connectToken(t, srv.URL, "write-only")

	res, err := reader.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range res.Tools {
		switch tool.Name {
		case "memory_list", "pattern_get", "pattern_history":
			seen++
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s is not marked read-only", tool.Name)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("tools/list has %d of memory_list, pattern_get and pattern_history: %v", seen, res.Tools)
	}
	limit := prop(t, schemaOf(t, toolNamed(t, res.Tools, "memory_list")), "limit")
	if limit["minimum"] != 1.0 || limit["maximum"] != float64(maxMemoryList) || limit["default"] != float64(defaultMemoryList) {
		t.Errorf("memory_list limit schema %v, want 1..%d, default %d", limit, maxMemoryList, defaultMemoryList)
	}

	got := mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "memory_list", map[string]any{}))
	if got["next_cursor"] != "project:a/m1" {
		t.Errorf("memory_list: %v", got)
	}
	mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "memory_list", map[string]any{"scope": "project", "limit": 2, "cursor": "project:a/m1"}))
	// one scope the reader does not read: the backend's (the route's 403) refusal
	mcptest.WantToolError(t, mcptest.Call(t, reader, "memory_list", map[string]any{"scope": "project:b"}), "memory_list", "may not read project:b")
	mcptest.WantToolError(t, mcptest.Call(t, reader, "memory_list", map[string]any{"limit": 501}), "/limit")
	mcptest.WantToolError(t, mcptest.Call(t, reader, "memory_list", map[string]any{"scope": "projects"}), "/scope")

	if p := mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "pattern_get", map[string]any{"pattern_id": "p1"})); p["id"] != "p1" || p["confidence"] != 2.0/3 {
		t.Errorf("pattern_get: %v", p)
	}
	mcptest.WantToolError(t, mcptest.Call(t, reader, "pattern_get", map[string]any{"pattern_id": "p2"}), "not found")
	mcptest.WantToolError(t, mcptest.Call(t, reader, "pattern_get", map[string]any{"pattern_id": ""}), "/pattern_id")
	if h := mcptest.Structured[map[string]any](t, mcptest.Call(t, writer, "pattern_history", map[string]any{"pattern_id": "p1", "limit": 10, "cursor": "3"})); h["pattern_id"] != "p1" {
		t.Errorf("pattern_history: %v", h)
	}
	if !slices.Equal(fake.last.ReadScopes, []string{"*"}) {
		t.Errorf("pattern_history ran for %+v, want the writer", fake.last)
	}
	mcptest.Structured[map[string]any](t, mcptest.Call(t, writer, "pattern_history", map[string]any{"pattern_id": "p1"}))
	mcptest.WantToolError(t, mcptest.Call(t, writer, "pattern_history", map[string]any{"pattern_id": "p1", "cursor": "0"}), "/cursor")
	mcptest.WantToolError(t, mcptest.Call(t, writer, "pattern_history", map[string]any{"pattern_id": "p1", "limit": 0}), "/limit")

	want := []string{
		`list "" 50 ""`, `list "project" 2 "project:a/m1"`, `list "project:b" 50 ""`,
		"get p1", "get p2", `history p1 10 "3"`, `history p1 0 ""`,
	}
	if !slices.Equal(fake.calls, want) {
		t.Errorf("backend calls\n%q\nwant\n%q", fake.calls, want)
	}

	n := fake.ncalls()
	for tool, args := range map[string]map[string]any{"memory_list": {}, "pattern_get": {"pattern_id": "p1"}, "pattern_history": {"pattern_id": "p1"}} {
		mcptest.WantToolError(t, mcptest.Call(t, writeOnly, tool, args), tool+": the caller may read no scope")
	}
	if fake.ncalls() != n {
		t.Errorf("a write-only caller's read calls reached the backend: %q", fake.calls[n:])
	}
}

// toolNamed is the tool of tools named name; the test fails without it.
func toolNamed(t *testing.T, tools []*mcp.Tool, name string) *mcp.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}
