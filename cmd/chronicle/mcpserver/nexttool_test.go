package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// fakeGraph records the queries next_tool sends and answers them back.
type fakeGraph struct {
	mu      sync.Mutex
	queries []NextQuery
	callers []Caller
}

func (f *fakeGraph) GraphNext(_ context.Context, c Caller, q NextQuery) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	f.callers = append(f.callers, c)
	return map[string]any{"suggestions": []any{map[string]any{"tool": "get_user_details", "probability": 0.5}}, "after": strings.Join(q.After, ",")}, nil
}

func (f *fakeGraph) last() (NextQuery, Caller, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return NextQuery{}, Caller{}, 0
	}
	return f.queries[len(f.queries)-1], f.callers[len(f.callers)-1], len(f.queries)
}

// next_tool is listed read-only with its bounds in the schema; its
// arguments reach the backend as GET /v1/graph/next's parameters (failed
// present even when empty, k defaulting to 5), with the request's caller;
// a bad argument is a tool error naming it, and the backend is not asked.
func TestNextTool(t *testing.T) {
	fake := &fakeGraph{}
	srv := httptest.NewServer(HTTPHandler(newFake(), Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken, Graph: fake}))
	t.Cleanup(srv.Close)
	reader := connectToken(t, srv.URL, "reader")

	res, err := reader.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range res.Tools {
		if tool.Name != "next_tool" {
			continue
		}
		found = true
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Error("next_tool is not marked read-only")
		}
		s := schemaOf(t, tool)
		if k := prop(t, s, "k"); k["minimum"] != 1.0 || k["maximum"] != 100.0 || k["default"] != 5.0 {
			t.Errorf("next_tool k schema %v", k)
		}
		if tx := prop(t, s, "text"); tx["maxLength"] != float64(maxNextText) {
			t.Errorf("next_tool text schema %v", tx)
		}
		if items, _ := prop(t, s, "after")["items"].(map[string]any); items["minLength"] != 1.0 {
			t.Errorf("next_tool after items %v", items)
		}
	}
	if !found {
		t.Fatal("next_tool is not listed")
	}

	got := mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "next_tool", map[string]any{"after": []string{"get_user_details", "get_reservation_details"}, "text": "cancel my trip"}))
	q, c, n := fake.last()
	if got["after"] != "get_user_details,get_reservation_details" || n != 1 ||
		!slices.Equal(q.After, []string{"get_user_details", "get_reservation_details"}) || q.Failed != nil || q.Text != "cancel my trip" || q.K != 5 || q.Scope != "" ||
		!slices.Equal(c.ReadScopes, tokens["reader"].ReadScopes) {
		t.Fatalf("next_tool: answer %v, query %+v, caller %+v", got, q, c)
	}
	// failed given empty: the outcomes are known, none failed
	mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "next_tool", map[string]any{"after": []string{"a", "b"}, "failed": []int{}, "k": 3, "scope": "project:a"}))
	if q, _, _ = fake.last(); q.Failed == nil || len(q.Failed) != 0 || q.K != 3 || q.Scope != "project:a" {
		t.Fatalf("next_tool failed=[]: query %+v", q)
	}
	mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "next_tool", map[string]any{"after": []string{"a", "b"}, "failed": []int{1}}))
	if q, _, _ = fake.last(); !slices.Equal(q.Failed, []int{1}) {
		t.Fatalf("next_tool failed=[1]: query %+v", q)
	}
	// the first call of a workflow: no arguments at all
	mcptest.Structured[map[string]any](t, mcptest.Call(t, reader, "next_tool", map[string]any{}))
	if q, _, n = fake.last(); n != 4 || len(q.After) != 0 || q.Failed != nil {
		t.Fatalf("next_tool without arguments: query %+v (%d calls)", q, n)
	}

	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"k": 101}, "k"},
		{map[string]any{"k": -1}, "k"},
		{map[string]any{"after": []string{"a", ""}}, "/after"}, // the schema's minLength
		{map[string]any{"after": []string{"a,b"}}, "/after/0"},
		{map[string]any{"after": []string{"a"}, "failed": []int{1}}, "/failed/0"},
		{map[string]any{"after": []string{"a"}, "failed": []int{-1}}, "failed"},
		{map[string]any{"failed": []int{0}}, "/failed/0"},
		{map[string]any{"text": strings.Repeat("é", maxNextText+1)}, "text"},
		{map[string]any{"after": make([]string, MaxNextAfter+1)}, "after"},
		// a position twice, as the route refuses failed=0,0 (both took it
		// silently: a walkthrough)
		{map[string]any{"after": []string{"a", "b"}, "failed": []int{0, 0}}, "/failed/1: position 0 is given twice"},
	} {
		mcptest.WantToolError(t, mcptest.Call(t, reader, "next_tool", bad.args), bad.want)
	}
	if _, _, n = fake.last(); n != 4 {
		t.Fatalf("refused calls reached the backend: %d calls, want 4", n)
	}
	// a write-only caller reads no graph
	mcptest.WantToolError(t, mcptest.Call(t, connectToken(t, srv.URL, "write-only"), "next_tool", map[string]any{}), "may read no scope")
	if _, _, n = fake.last(); n != 4 {
		t.Fatalf("a write-only call reached the backend: %d calls", n)
	}
}

// Without Options.Graph there is no next_tool (the service a tool would
// call is not there).
func TestNextToolNeedsAGraph(t *testing.T) {
	srv := httptest.NewServer(HTTPHandler(newFake(), Options{Name: "chronicle-test", Version: "1", CallerFunc: callerFromToken}))
	t.Cleanup(srv.Close)
	res, err := connectToken(t, srv.URL, "reader").ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "next_tool" {
			t.Fatal(fmt.Sprint("next_tool listed without a graph backend: ", tool.Description))
		}
	}
}
