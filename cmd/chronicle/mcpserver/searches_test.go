package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// fakeSearches holds searches by scope and id, resolves them for a caller
// the way the service does (scope given or the one granted scope holding
// the id; another scope's search is not found) and records resumes.
type fakeSearches struct {
	mu       sync.Mutex
	status   map[string]string // scope "/" id → status
	resumed  []string          // scope "/" id ":" decision ":" note
	lastCall Caller
}

func (f *fakeSearches) resolve(id, scope string, scopes []string) (string, error) {
	for _, sc := range []string{"project:a", "project:b"} {
		if (scope == "" || scope == sc) && (slices.Contains(scopes, AllScopes) || slices.Contains(scopes, sc)) {
			if _, ok := f.status[sc+"/"+id]; ok {
				return sc + "/" + id, nil
			}
		}
	}
	return "", fmt.Errorf("%w: search %q", search.ErrNotFound, id)
}

func (f *fakeSearches) SearchGet(_ context.Context, c Caller, id, scope string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastCall = c
	key, err := f.resolve(id, scope, c.ReadScopes)
	if err != nil {
		return nil, err
	}
	return map[string]any{"key": key, "status": f.status[key], "open": []any{map[string]any{"id": "r.03", "f": 0.05}}}, nil
}

func (f *fakeSearches) SearchResume(_ context.Context, c Caller, id, scope, decision, note string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastCall = c
	key, err := f.resolve(id, scope, c.WriteScopes)
	if err != nil {
		return nil, err
	}
	if f.status[key] != "paused" {
		return nil, fmt.Errorf("search %q is %s, not paused", id, f.status[key])
	}
	f.status[key] = "running"
	f.resumed = append(f.resumed, key+":"+decision+":"+note)
	return map[string]any{"search_id": id, "decision": decision}, nil
}

// search_get and search_resume reach the backend with the caller of the
// request; another scope's search is not found for reading and for
// resuming, a bad decision is refused before the backend, and a search
// that is not paused is an error.
func TestHTTPSearchTools(t *testing.T) {
	fake := &fakeSearches{status: map[string]string{"project:a/s1": "paused", "project:b/s2": "paused"}}
	srv := httptest.NewServer(HTTPHandler(newFake(), Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken, Searches: fake}))
	t.Cleanup(srv.Close)
	reader, writer := connectToken(t, srv.URL, "reader"), connectToken(t, srv.URL, "writer")

	res, err := reader.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		switch tool.Name {
		case "search_get":
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Error("search_get is not marked read-only")
			}
		case "memory_search":
			// it writes usage (memory.retrieved.v1): not read-only in the
			// MCP spec's sense (it was marked so: a walkthrough, 2026-11-30)
			if tool.Annotations == nil || tool.Annotations.ReadOnlyHint {
				t.Error("memory_search, which records usage, is marked read-only")
			}
		case "search_resume":
			if d := prop(t, schemaOf(t, tool), "decision"); fmt.Sprint(d["enum"]) != "[approve reject]" {
				t.Errorf("search_resume decision schema %v", d)
			}
		}
	}
	if !slices.Contains(names, "search_get") || !slices.Contains(names, "search_resume") {
		t.Fatalf("tools %v", names)
	}

	got := mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "search_get", map[string]any{"search_id": "s1"}))
	if got["key"] != "project:a/s1" || got["status"] != "paused" {
		t.Errorf("search_get as reader: %v", got)
	}
	// project:b's search: not found for a reader of project:a, with or without its scope
	mcptest.WantToolError(t, mcptest.Call(t, reader, "search_get", map[string]any{"search_id": "s2"}), "not found")
	mcptest.WantToolError(t, mcptest.Call(t, reader, "search_get", map[string]any{"search_id": "s2", "scope": "project:b"}), "not found")
	// the reader writes nothing: refused before the backend
	mcptest.WantToolError(t, mcptest.Call(t, reader, "search_resume", map[string]any{"search_id": "s1", "decision": "approve"}), "may write no scope")
	// the writer reads every scope but writes only project:a
	mcptest.WantToolError(t, mcptest.Call(t, writer, "search_resume", map[string]any{"search_id": "s2", "decision": "approve"}), "not found")
	mcptest.WantToolError(t, mcptest.Call(t, writer, "search_resume", map[string]any{"search_id": "s1", "decision": "maybe"}), "decision")
	if len(fake.resumed) != 0 {
		t.Fatalf("refused resumes reached the backend: %v", fake.resumed)
	}
	out := mcptest.Structured[map[string]any](t, mcptest.Call(t, writer, "search_resume", map[string]any{"search_id": "s1", "decision": "reject", "note": "uses 20"}))
	if out["decision"] != "reject" || !slices.Equal(fake.resumed, []string{"project:a/s1:reject:uses 20"}) || !slices.Equal(fake.lastCall.WriteScopes, []string{"project:a"}) {
		t.Errorf("search_resume: %v, backend %v, caller %+v", out, fake.resumed, fake.lastCall)
	}
	mcptest.WantToolError(t, mcptest.Call(t, writer, "search_resume", map[string]any{"search_id": "s1", "decision": "approve"}), "not paused")
	mcptest.WantToolError(t, mcptest.Call(t, writer, "search_get", map[string]any{"search_id": ""}), "search_id")
}
