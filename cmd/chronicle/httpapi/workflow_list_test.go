package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// listAll pages GET /v1/workflows (query q, then each next_cursor) from
// base as token and returns the keys (scope/id) of every page in order.
func listAll(t *testing.T, base, token, q string) ([]string, []httpapi.WorkflowList) {
	t.Helper()
	var keys []string
	var pages []httpapi.WorkflowList
	cursor := ""
	for i := 0; i < 100; i++ {
		path := "/v1/workflows?" + q
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, body, _ := fetch(t, base, token, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s as %s: %d %s", path, token, code, body)
		}
		var page httpapi.WorkflowList
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
		for _, w := range page.Workflows {
			keys = append(keys, w.Key())
		}
		if cursor = page.NextCursor; cursor == "" {
			return keys, pages
		}
	}
	t.Fatal("more than 100 pages")
	return nil, nil
}

// GET /v1/workflows lists the workflows of the scopes the token reads, in
// key order (by id within a scope), with their status and checkpoint, in
// pages (limit, next_cursor); a token of project:b never sees project:a's
// workflows, nor a's token b's (the same id in both is two workflows);
// bad parameters are 400s naming the parameter. Before, the route did not
// exist (404): a user who lost a workflow id could not find it.
func TestWorkflowList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &clusterTokens}).Handler()))
	t.Cleanup(srv.Close)
	a, b := client.New(srv.URL, "tok-a"), client.New(srv.URL, "tok-b")
	ma, mb := musts{t, a}, musts{t, b}
	for _, id := range []string{"w-3", "w-1", "w-2", "w-1/sub", "w-10"} {
		ma.w(a.Update(ctx, id, 0, events.ChannelMessages, "secret of a"))
	}
	cp := ma.w(a.Checkpoint(ctx, "w-1", 0))
	ma.w(a.Interrupt(ctx, "w-2", "human", "approve?", "yes", "no"))
	ma.w(a.Complete(ctx, "w-3", "success", map[string]any{"done": true}))
	for _, id := range []string{"w-1", "w-b"} {
		mb.w(b.Update(ctx, id, 0, events.ChannelMessages, "secret of b"))
	}

	keys, pages := listAll(t, srv.URL, "tok-a", "")
	if want := "[project:a/w-1 project:a/w-1/sub project:a/w-10 project:a/w-2 project:a/w-3]"; fmt.Sprint(keys) != want {
		t.Fatalf("tok-a lists %v, want %v", keys, want)
	}
	byID := map[string]int{}
	for i, w := range pages[0].Workflows {
		byID[w.WorkflowID] = i
	}
	ws := pages[0].Workflows
	if w := ws[byID["w-1"]]; w.Checkpoints != 1 || w.CheckpointID != cp.CheckpointID || w.Checkpoint == nil || w.Events != 2 || w.Status != "running" || w.UpdatedAt == "" {
		t.Fatalf("w-1 listed as %+v, want 1 checkpoint %s, 2 events, running", w, cp.CheckpointID)
	}
	// the log position of the last event applied (the checkpoint, for
	// w-1): what replay --until takes to rebuild the store as of it
	if w := ws[byID["w-1"]]; w.Position == "" || w.Position != cp.Position {
		t.Fatalf("w-1 listed at position %q, want its last event's %q", w.Position, cp.Position)
	}
	if v := ma.state("w-1"); v.Position != cp.Position {
		t.Fatalf("w-1's state at position %q, want %q", v.Position, cp.Position)
	}
	if w := ws[byID["w-2"]]; w.Status != "waiting_for_human" || w.PendingDecisions != 1 {
		t.Fatalf("w-2 listed as %+v, want waiting_for_human with 1 pending decision", w)
	}
	if w := ws[byID["w-3"]]; w.Status != "completed" || w.Outcome != "success" {
		t.Fatalf("w-3 listed as %+v, want completed", w)
	}
	code, body, _ := fetch(t, srv.URL, "tok-a", "/v1/workflows")
	if code != 200 || strings.Contains(string(body), "secret") || strings.Contains(string(body), "project:b") {
		t.Fatalf("tok-a's list: %d %s (no channel content, no project:b)", code, body)
	}
	// scope isolation: b sees its own two, the same id w-1 included
	if keys, _ := listAll(t, srv.URL, "tok-b", ""); fmt.Sprint(keys) != "[project:b/w-1 project:b/w-b]" {
		t.Fatalf("tok-b lists %v", keys)
	}
	if code, body, _ := fetch(t, srv.URL, "tok-a", "/v1/workflows?scope=project:b"); code != http.StatusForbidden || !strings.Contains(string(body), "scope:") {
		t.Fatalf("tok-a asking for project:b: %d %s, want 403 naming scope", code, body)
	}
	// several scopes: key order across them, pages of 2
	keys, pages = listAll(t, srv.URL, "tok-ab", "limit=2")
	if want := "[project:a/w-1 project:a/w-1/sub project:a/w-10 project:a/w-2 project:a/w-3 project:b/w-1 project:b/w-b]"; fmt.Sprint(keys) != want {
		t.Fatalf("tok-ab lists %v, want %v", keys, want)
	}
	if len(pages) != 4 || pages[0].NextCursor != "project:a/w-1/sub" || len(pages[3].Workflows) != 1 {
		t.Fatalf("tok-ab's pages of 2: %+v", pages)
	}
	if keys, _ := listAll(t, srv.URL, "tok-admin", "scope=project:b"); fmt.Sprint(keys) != "[project:b/w-1 project:b/w-b]" {
		t.Fatalf("admin with ?scope=project:b lists %v", keys)
	}
	if keys, _ := listAll(t, srv.URL, "tok-admin", "limit=3"); len(keys) != 7 {
		t.Fatalf("admin lists %v, want 7", keys)
	}
	// a page that ends exactly at the last workflow has no next_cursor
	if _, pages := listAll(t, srv.URL, "tok-b", "limit=2"); len(pages) != 1 || pages[0].NextCursor != "" {
		t.Fatalf("tok-b's one full page: %+v", pages)
	}
	// an empty cursor (what the last page's next_cursor says) is the first
	// page, as on the sessions list (it was a 400: a walkthrough)
	_, first := listAll(t, srv.URL, "tok-b", "limit=2")
	if code, body, _ := fetch(t, srv.URL, "tok-b", "/v1/workflows?limit=2&cursor="); code != http.StatusOK || !bytes.Contains(body, []byte(first[0].Workflows[0].Key()[len("project:b/"):])) {
		t.Fatalf("GET /v1/workflows?cursor= : %d %s, want the first page", code, body)
	}
	for q, field := range map[string]string{
		"limit=0": "limit:", "limit=-1": "limit:", "limit=abc": "limit:", "limit=": "limit:", "limit=501": "limit:",
		"cursor=nonsense": "cursor:", "cursor=" + url.QueryEscape("project:a/"): "cursor:", "scope=nope": "scope:",
	} {
		code, body, _ := fetch(t, srv.URL, "tok-a", "/v1/workflows?"+q)
		if code != http.StatusBadRequest || !strings.HasPrefix(errorOf(body), field) {
			t.Fatalf("GET /v1/workflows?%s: %d %s, want 400 naming %s", q, code, body, field)
		}
	}
	if code, _, _ := fetch(t, srv.URL, "", "/v1/workflows"); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", code)
	}
}

func errorOf(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error
}

// On a cluster each member's store holds only its partitions' workflows:
// GET /v1/workflows asks every member for its page after the cursor and
// merges them by key, so the pages from any member list every workflow
// of the token's scopes once, in key order (a member's own store alone
// holds only some of them). A member that does not answer makes the
// list 504 within the forward timeout, naming it; a member whose server
// is gone, 503 naming it with Retry-After. Never a partial page.
func TestWorkflowListCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const fwd = time.Second
	m1 := startMember(ctx, t, "m1", nil, fwd)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), fwd)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	var want []string
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("w-%02d", i)
		if code, body := postJSON(t, ms[i%2].srv.URL, "tok-a", "/v1/workflows/"+id+"/updates", `{"layer":0,"channel":"messages","update":"hi"}`); code != 200 {
			t.Fatalf("update %s: %d %s", id, code, body)
		}
		want = append(want, "project:a/"+id)
	}
	if code, body := postJSON(t, m1.srv.URL, "tok-b", "/v1/workflows/w-b/updates", `{"layer":0,"channel":"messages","update":"hi"}`); code != 200 {
		t.Fatalf("update w-b: %d %s", code, body)
	}
	// each store alone holds part of them
	for _, m := range ms {
		code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/workflows?limit=500", httpapi.ForwardedHeader, "test")
		var page httpapi.WorkflowList
		_ = json.Unmarshal(body, &page)
		if code != 200 || len(page.Workflows) == 0 || len(page.Workflows) == 12 {
			t.Fatalf("%s's own store lists %d of 12 (%d): the test needs them spread", m.name, len(page.Workflows), code)
		}
	}
	for _, m := range ms {
		for _, limit := range []string{"limit=5", "limit=12", ""} {
			keys, _ := listAll(t, m.srv.URL, "tok-a", limit)
			if fmt.Sprint(keys) != fmt.Sprint(want) {
				t.Fatalf("%s, %s: tok-a lists %v, want %v", m.name, limit, keys, want)
			}
		}
		if keys, _ := listAll(t, m.srv.URL, "tok-b", "limit=5"); fmt.Sprint(keys) != "[project:b/w-b]" {
			t.Fatalf("%s: tok-b lists %v", m.name, keys)
		}
	}
	self2 := m2.p.Runner.MemberID()
	m2.swap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	start := time.Now()
	code, body, _ := fetch(t, m1.srv.URL, "tok-a", "/v1/workflows?limit=5")
	var fe httpapi.ForwardError
	_ = json.Unmarshal(body, &fe)
	if code != http.StatusGatewayTimeout || fe.Member != self2 || fe.URL != m2.api.Advertise {
		t.Fatalf("list with m2 silent: %d %s, want 504 naming %s", code, body, self2)
	}
	if took := time.Since(start); took > fwd+2*time.Second {
		t.Fatalf("list with m2 silent took %v, bound %v", took, fwd)
	}
	m2.srv.Close()
	req, _ := http.NewRequest(http.MethodGet, m1.srv.URL+"/v1/workflows", nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var fe2 httpapi.ForwardError
	_ = json.NewDecoder(resp.Body).Decode(&fe2)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || fe2.Member != self2 {
		t.Fatalf("list with m2's server gone: %d %+v, Retry-After %q; want 503 naming %s", resp.StatusCode, fe2, resp.Header.Get("Retry-After"), self2)
	}
}
