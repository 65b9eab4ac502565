package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// GET /v1/memories/{id}/history pages a memory's retrievals (limit,
// cursor, at most HistoryPageBytes a page) as GET
// /v1/reasoning/{id}/history pages passes: every search hit adds one, and
// before, all of them came in one body (a new user's walkthrough).
// Following next_cursor reads each retrieval once, in log order; changes
// and signals come on every page; a bad limit or cursor is a 400 naming it.
func TestMemoryHistoryPagesRetrievals(t *testing.T) {
	p, _, base := scopedServer(t)
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Kiwi paging plan", "description": "d", "content": "How to page a kiwi history.", "outcome": "success"})
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	id := rec["id"].(string)
	waitCaughtUp(t, p)
	const n = 7
	for i := 0; i < n; i++ {
		q := fmt.Sprintf("kiwi paging plan q%d", i)
		if code, m := call(t, base, "tok-a", "GET", "/v1/memories/search?min_confidence=0&query="+url.QueryEscape(q), nil); code != 200 || len(m["memories"].([]any)) != 1 {
			t.Fatalf("search %d: %d %v", i, code, m)
		}
	}
	waitCaughtUp(t, p)
	read := func(query string) ([]string, string, map[string]any) {
		t.Helper()
		code, h := call(t, base, "tok-a", "GET", "/v1/memories/"+id+"/history"+query, nil)
		if code != 200 {
			t.Fatalf("history%s: %d %v", query, code, h)
		}
		var qs []string
		for _, r := range h["retrievals"].([]any) {
			qs = append(qs, r.(map[string]any)["query"].(string))
		}
		if h["retrieval_count"] != float64(n) || h["changes"] == nil || h["signals"] == nil {
			t.Fatalf("history%s: %v; want retrieval_count %d, changes and signals on every page", query, h, n)
		}
		return qs, h["next_cursor"].(string), h
	}
	all, next, _ := read("")
	if len(all) != n || next != "" {
		t.Fatalf("without limit: %d retrievals, next_cursor %q; want %d and none", len(all), next, n)
	}
	for _, c := range []struct {
		limit   string
		bytes   int
		perPage int
	}{{"3", 0, 3}, {"", 10, 1}, {"500", 10, 1}} {
		if c.bytes > 0 {
			defer func(b int) { httpapi.HistoryPageBytes = b }(httpapi.HistoryPageBytes)
			httpapi.HistoryPageBytes = c.bytes // each retrieval is larger: one a page
		}
		var got []string
		cursor, pages := "", 0
		for {
			q := url.Values{}
			if c.limit != "" {
				q.Set("limit", c.limit)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			page, next, _ := read("?" + q.Encode())
			pages++
			if len(page) == 0 || len(page) > c.perPage {
				t.Fatalf("limit %q, %d bytes: page %d holds %d retrievals, want 1 to %d", c.limit, c.bytes, pages, len(page), c.perPage)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			if pages > n {
				t.Fatalf("limit %q: more than %d pages", c.limit, n)
			}
			cursor = next
		}
		if strings.Join(got, "|") != strings.Join(all, "|") {
			t.Fatalf("limit %q, %d bytes: the pages read %v, want %v once each in order", c.limit, c.bytes, got, all)
		}
	}
	for _, bad := range []struct{ q, name string }{{"?limit=0", "limit"}, {"?limit=501", "limit"}, {"?cursor=abc", "cursor"}, {"?cursor=0", "cursor"}, {"?cursor=03", "cursor"}} {
		if code, m := call(t, base, "tok-a", "GET", "/v1/memories/"+id+"/history"+bad.q, nil); code != 400 || !strings.Contains(fmt.Sprint(m["error"]), bad.name) {
			t.Errorf("history%s: %d %v; want a 400 naming %s", bad.q, code, m, bad.name)
		}
	}
}
