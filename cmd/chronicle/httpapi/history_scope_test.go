package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
)

// TestMemoryHistoryWithholdsCrossScopeQueries: a retrieval's query may
// carry anything its searcher could read, so a memory's history shows it
// only to a caller that reads every scope, to the searcher itself and to a
// caller that reads every scope the searcher could read (reader_scopes).
// Before the rule a project:a reader saw the query of a token reading *
// ("… BRAVOSECRET …", project:b's word), found by a new user's
// walkthrough. A token may not claim reader_scopes other than its own on
// POST /v1/events.
func TestMemoryHistoryWithholdsCrossScopeQueries(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "a2", SHA256: access.Hash("tok-a2"), Read: []string{"project:a"}},
		// ab writes project:a: a search writes usage only where the
		// searcher may write (TestSearchByAReaderWritesNoUsage), and its
		// retrieval, carrying b's word, is what the history must withhold
		{Name: "ab", SHA256: access.Hash("tok-ab"), Read: []string{"project:b", "project:a"}, Write: []string{"project:a"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	t.Cleanup(srv.Close)
	base := srv.URL
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Zebra quokka merger plan", "description": "d", "content": "The merger plan of project a.", "outcome": "success"})
	if code != 202 {
		t.Fatalf("record %d %v", code, rec)
	}
	id := rec["id"].(string)
	waitCaughtUp(t, p)
	queries := map[string]string{ // token → query
		"tok-admin": "zebra quokka BRAVOSECRET merger plan",
		"tok-ab":    "zebra quokka BRAVOSECRET merger plan of b",
		"tok-a":     "zebra quokka merger plan of a",
	}
	// admin searches as a session of project:b: its id is b's too
	start := map[string]any{"specversion": "1.0", "id": "start-b", "source": "test/b", "type": string(events.SessionStarted), "scope": "project:b",
		"sessionid": "sb-secret", "data": map[string]any{"original_task": "plan the merger", "success_criteria": []any{}}}
	if code, m := call(t, base, "tok-admin", "POST", "/v1/events", []any{start}); code != 202 {
		t.Fatalf("a session of project:b: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	for _, tok := range []string{"tok-admin", "tok-ab", "tok-a"} {
		scope, session := "all", ""
		switch tok {
		case "tok-ab":
			scope = "project:a" // filtered to project:a, the query still carries b's word
		case "tok-admin":
			session = "&session_id=sb-secret"
		}
		if code, m := call(t, base, tok, "GET", "/v1/memories/search?min_confidence=0&scope="+scope+session+"&query="+url.QueryEscape(queries[tok]), nil); code != 200 || len(m["memories"].([]any)) == 0 {
			t.Fatalf("search by %s: %d %v", tok, code, m)
		}
	}
	waitCaughtUp(t, p)
	// reader → the searchers whose query it sees
	for reader, sees := range map[string]map[string]bool{
		"tok-a2":    {"token:a": true},
		"tok-a":     {"token:a": true},
		"tok-ab":    {"token:a": true, "token:ab": true},
		"tok-admin": {"token:a": true, "token:ab": true, "token:admin": true},
	} {
		code, h := call(t, base, reader, "GET", "/v1/memories/"+id+"/history?scope=project:a", nil)
		if code != 200 {
			t.Fatalf("history as %s: %d %v", reader, code, h)
		}
		rs := h["retrievals"].([]any)
		if len(rs) != 3 {
			t.Fatalf("history as %s: retrievals %v", reader, rs)
		}
		for _, x := range rs {
			r := x.(map[string]any)
			src := r["source"].(string)
			if sees[src] {
				if r["query"] != queries["tok-"+src[len("token:"):]] || r["query_withheld"] != nil || r["reader_scopes"] == nil {
					t.Errorf("history as %s: retrieval by %s should show its query: %v", reader, src, r)
				}
				if src == "token:admin" && r["session_id"] != "sb-secret" {
					t.Errorf("history as %s: retrieval by %s should show its session: %v", reader, src, r)
				}
			} else if _, has := r["query"]; has || r["query_withheld"] != true || r["reader_scopes"] != nil || r["session_id"] != nil {
				t.Errorf("history as %s: retrieval by %s should withhold its query and session: %v", reader, src, r)
			}
		}
	}
	// a usage posted with reader_scopes other than the token's: refused
	ev := func(readers any) []events.Envelope {
		env, err := events.New(events.MemoryRetrieved, "test/usage", "u-"+url.QueryEscape(fmt.Sprint(readers)), time.Now(), map[string]any{"memory_id": id, "query": "q", "reader_scopes": readers})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		return []events.Envelope{env}
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", ev([]string{"*"})); code != 403 || m["pointer"] != "/data/reader_scopes" {
		t.Fatalf("a claiming reader_scopes [*]: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", ev([]string{"project:a"})); code != 202 {
		t.Fatalf("a naming its own reader_scopes: %d %v", code, m)
	}
}
