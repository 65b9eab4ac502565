package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// GET /v1/memories lists the memory bank of the scopes the caller reads,
// in key order, limit at a time, each memory as GET /v1/memories/{id}
// answers it. Before, there was no list: memory search answers at most 20
// hits, so an analyst could not enumerate a scope's memories for an audit
// (an analyst's walkthrough, 2026-12-07). Another scope's memories are
// never listed, ?scope= of a scope the token does not read is a 403, and
// a bad limit or cursor a 400 naming it. A page ends before about 4 MiB
// (MemoryListPageBytes), as a memory's content may be close to the event
// limit.
func TestMemoriesAreListed(t *testing.T) {
	p, _, base := scopedServer(t)
	record := func(tok, scope, title string) string {
		t.Helper()
		body := map[string]any{"title": title, "description": "d", "content": "content of " + title, "outcome": "success"}
		if scope != "" {
			body["scope"] = scope
		}
		code, rec := call(t, base, tok, "POST", "/v1/memories", body)
		if code != 202 {
			t.Fatalf("record %s: %d %v", title, code, rec)
		}
		return rec["id"].(string)
	}
	want := map[string]bool{}
	for _, title := range []string{"Plum one", "Plum two", "Plum three"} {
		want["project:a/"+record("tok-a", "", title)] = true
	}
	other := "project:b/" + record("tok-b", "", "Plum of b")
	waitCaughtUp(t, p)

	var got []string
	cursor := ""
	for i := 0; ; i++ {
		code, m := call(t, base, "tok-a", "GET", "/v1/memories?limit=2&cursor="+url.QueryEscape(cursor), nil)
		list, _ := m["memories"].([]any)
		if code != 200 || len(list) == 0 || len(list) > 2 || i > 2 {
			t.Fatalf("page %d: %d %v", i, code, m)
		}
		for _, it := range list {
			mem := it.(map[string]any)
			// the memory read's shape: its content, confidence and counts
			if mem["content"] == nil || mem["confidence"] == nil || mem["usage_count"] == nil {
				t.Fatalf("a listed memory %v: want the memory as GET /v1/memories/{id} answers it", mem)
			}
			got = append(got, fmt.Sprint(mem["scope"], "/", mem["id"]))
		}
		if cursor, _ = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("tok-a's memories %v; want project:a's three", got)
	}
	for i, k := range got {
		if !want[k] || i > 0 && got[i-1] >= k {
			t.Fatalf("tok-a's memories %v: want project:a's three, each once, in key order", got)
		}
	}
	// a page ends before the memory that would take it past
	// MemoryListPageBytes, holding at least one: one a page here
	defer func(b int) { httpapi.MemoryListPageBytes = b }(httpapi.MemoryListPageBytes)
	httpapi.MemoryListPageBytes = 10
	var small []string
	cursor = ""
	for i := 0; ; i++ {
		code, m := call(t, base, "tok-a", "GET", "/v1/memories?limit=500&cursor="+url.QueryEscape(cursor), nil)
		list, _ := m["memories"].([]any)
		if code != 200 || len(list) != 1 || i > 2 {
			t.Fatalf("10-byte pages, page %d: %d %v; want one memory a page", i, code, m)
		}
		small = append(small, fmt.Sprint(list[0].(map[string]any)["scope"], "/", list[0].(map[string]any)["id"]))
		if cursor, _ = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if fmt.Sprint(small) != fmt.Sprint(got) {
		t.Fatalf("10-byte pages %v; want the same memories %v", small, got)
	}
	httpapi.MemoryListPageBytes = 4 << 20
	code, m := call(t, base, "tok-admin", "GET", "/v1/memories?scope=project:b", nil)
	if list, _ := m["memories"].([]any); code != 200 || len(list) != 1 || fmt.Sprint(list[0].(map[string]any)["scope"], "/", list[0].(map[string]any)["id"]) != other {
		t.Fatalf("admin, ?scope=project:b: %d %v; want project:b's one memory", code, m)
	}
	if code, m := call(t, base, "tok-admin", "GET", "/v1/memories?scope=project", nil); code != 200 || len(m["memories"].([]any)) != 4 {
		t.Fatalf("admin, ?scope=project: %d %v; want all four", code, m)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories?scope=project:b", nil); code != 403 || m["parameter"] != "scope" {
		t.Fatalf("tok-a, ?scope=project:b: %d %v; want a 403 naming scope", code, m)
	}
	for _, q := range []string{"cursor=nope", "cursor=project:a/", "limit=0", "limit=501"} {
		if code, m := call(t, base, "tok-a", "GET", "/v1/memories?"+q, nil); code != 400 || !strings.HasPrefix(fmt.Sprint(m["error"]), q[:strings.IndexByte(q, '=')]+": ") {
			t.Errorf("?%s: %d %v; want a 400 naming the parameter", q, code, m)
		}
	}
	// a token that reads no scope lists nothing
	if code, m := call(t, base, "tok-wo", "GET", "/v1/memories", nil); code != 200 || len(m["memories"].([]any)) != 0 {
		t.Fatalf("write-only token: %d %v; want an empty list", code, m)
	}
}
