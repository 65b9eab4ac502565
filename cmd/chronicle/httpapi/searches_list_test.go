package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// GET /v1/searches lists the tree searches of the scopes the caller reads,
// in key order, paged by next_cursor, without their open sets and paths;
// another scope's searches are never listed, and one scope the token does
// not read is a 403. Before, there was no list: a search id could be
// learnt only from whoever started the search (a walkthrough's finding).
func TestSearchesAreListed(t *testing.T) {
	p, _, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(scope, id string) {
		t.Helper()
		r, err := treesearch.NewRunner(p.Store, p.Producer, game24.Arithmetic{}, game24.Arithmetic{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Start(ctx, treesearch.StartRequest{Scope: scope, SearchID: id, Goal: game24.Goal("4 5 6 10"), RootState: "4 5 6 10", Config: game24.Config(5)}); err != nil {
			t.Fatal(err)
		}
	}
	start("project:a", "s2")
	start("project:a", "s1")
	start("project:b", "s0")
	waitCaughtUp(t, p)
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		code, m := call(t, base, "tok-a", "GET", "/v1/searches?limit=1&cursor="+url.QueryEscape(cursor), nil)
		list, _ := m["searches"].([]any)
		if code != 200 || len(list) != 1 || i > 2 {
			t.Fatalf("page %d: %d %v", i, code, m)
		}
		s := list[0].(map[string]any)
		if _, has := s["open"]; has || s["status"] != treesearch.StatusRunning || s["goal"] == "" || s["proposer"] == nil {
			t.Fatalf("a listed search %v: want its summary (running, goal, proposer) without the open set", s)
		}
		got = append(got, fmt.Sprint(s["scope"], "/", s["id"]))
		if cursor, _ = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if fmt.Sprint(got) != "[project:a/s1 project:a/s2]" {
		t.Fatalf("tok-a's searches %v; want project:a's two, in id order", got)
	}
	if code, m := call(t, base, "tok-admin", "GET", "/v1/searches", nil); code != 200 || len(m["searches"].([]any)) != 3 {
		t.Fatalf("admin's list: %d %v; want all three", code, m)
	}
	if code, m := call(t, base, "tok-wo", "GET", "/v1/searches", nil); code != 200 || len(m["searches"].([]any)) != 0 {
		t.Fatalf("a write-only token's list: %d %v; want an empty list", code, m)
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/searches?scope=project:b", nil); code != 403 {
		t.Fatalf("tok-a, ?scope=project:b: %d %v; want 403", code, m)
	}
	for _, q := range []string{"cursor=nope", "cursor=project:a/", "limit=0"} {
		if code, m := call(t, base, "tok-a", "GET", "/v1/searches?"+q, nil); code != 400 || !strings.HasPrefix(fmt.Sprint(m["error"]), q[:strings.IndexByte(q, '=')]+": ") {
			t.Errorf("?%s: %d %v; want a 400 naming the parameter", q, code, m)
		}
	}
}
