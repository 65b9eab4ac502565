package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// waitDeadLetters polls GET /v1/deadletters<query> as token until it lists
// at least n letters (the relay writes them after the processor's batch,
// and the dead-letter projection applies them after that) and returns them.
func waitDeadLetters(t *testing.T, p *pipeline.Pipeline, base, token, query string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		waitCaughtUp(t, p)
		code, m := call(t, base, token, "GET", "/v1/deadletters"+query, nil)
		if code != 200 {
			t.Fatalf("GET /v1/deadletters%s as %s: %d %v", query, token, code, m)
		}
		raw, _ := m["dead_letters"].([]any)
		if len(raw) >= n {
			out := make([]map[string]any, len(raw))
			for i, r := range raw {
				out[i] = r.(map[string]any)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/deadletters%s as %s: %v; want at least %d letters", query, token, m, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quotaSearchIn is a tree search of scope with a quota of 1000 tokens, 150
// of them used by its first expansion, and a reservation of 900 more for
// the second: accepted by POST /v1/events (202), refused by the tree-search
// processor (used 150 + outstanding 0 + 900 > 1000).
func quotaSearchIn(t *testing.T, scope, id string) []events.Envelope {
	t.Helper()
	parent := "r"
	h, f, score := 0.5, 1.0, 0.5
	evs := []struct {
		typ  events.Type
		data any
	}{
		{events.SearchStarted, events.SearchStartedData{SearchID: id, Goal: "obtain 24", RootState: "root",
			Config:   events.SearchConfig{BeamWidth: 2, K: 4, MaxDepth: 3, CostPerStep: 0.5, QuotaTokens: 1000},
			Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}}},
		{events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: id, Expansion: 1, NodeID: "r", Tokens: 150}},
		{events.SearchNodeExpanded, events.SearchNodeData{SearchID: id, NodeID: "n1", ParentID: &parent, Expansion: 1, Depth: 1, State: "a",
			StateDigest: treesearch.Digest("a"), Candidate: "step", G: 0.5, H: &h, F: &f, Score: &score}},
		{events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: id, Expansion: 1, NodeID: "r", Children: []string{"n1"}, Kept: []string{"n1"}, Dropped: []string{}, TokensUsed: 150}},
		{events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: id, Expansion: 2, NodeID: "n1", Tokens: 900}},
	}
	var out []events.Envelope
	for i, e := range evs {
		env, err := events.New(e.typ, "dltest/"+scope, fmt.Sprintf("%s-%d", id, i), time.Now(), e.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		out = append(out, env)
	}
	return out
}

// TestDeadLettersOfTheCallersScopes: an event accepted with 202 and then
// refused by a processor (a reservation breaching the search's quota) is
// listed by GET /v1/deadletters for the token of its scope, with the
// event's id, type, source and scope, its position, the processor, the
// reason and its pointer, and the letter's position and time; the other
// scope's token never sees it (nor may it name the scope: 403), and
// ?type=, ?cursor= and ?limit= select and page. Found by an agent-runtime
// developer's walkthrough: the refusal sat only in chronicle.deadletter,
// which no HTTP or MCP route showed (on the old code the route is 404).
func TestDeadLettersOfTheCallersScopes(t *testing.T) {
	p, _, base := scopedServer(t)
	aEvs := quotaSearchIn(t, "project:a", "g24-901")
	for _, e := range aEvs {
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{e}); code != 202 {
			t.Fatalf("a's %s: %d %v", e.Type, code, m)
		}
	}
	refused := aEvs[len(aEvs)-1]
	bEnvs, _ := sessionIn(t, 5, "project:b", "B-ONLY")
	orphan := bEnvs[len(bEnvs)-1] // a completion of a session that never started
	if orphan.Type != events.SessionCompleted {
		t.Fatalf("b's last event is %s", orphan.Type)
	}
	orphan.SessionID, orphan.ID = "never-started", "b-orphan"
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{orphan}); code != 202 {
		t.Fatalf("b's completion: %d %v", code, m)
	}
	as := waitDeadLetters(t, p, base, "tok-a", "", 1)
	waitDeadLetters(t, p, base, "tok-admin", "?type="+string(events.SessionCompleted), 1)
	var quota map[string]any
	for _, l := range as {
		if l["scope"] != "project:a" || strings.Contains(fmt.Sprint(l), "b-orphan") {
			t.Fatalf("a's list holds %v", l)
		}
		if l["event_id"] == refused.ID && l["handler"] == treesearch.Name+"@"+string(events.TopicSearches) {
			quota = l
		}
	}
	if quota == nil {
		t.Fatalf("a's letters %v: none of the tree-search processor for %s", as, refused.ID)
	}
	if quota["event_type"] != string(events.SearchQuotaReserved) || quota["event_source"] != refused.Source || quota["topic"] != string(events.TopicSearches) ||
		!strings.Contains(fmt.Sprint(quota["reason"]), "would breach the quota: used 150 + outstanding 0 + 900 > 1000") || quota["pointer"] != "/data/tokens" ||
		quota["id"] != fmt.Sprintf("%s:%v:%v", quota["topic"], quota["partition"], quota["offset"]) || quota["dead_lettered_at"] == "" || quota["dead_letter_offset"] == nil {
		t.Fatalf("the quota letter: %v", quota)
	}
	// the other scope: its own letters only, and a's scope is refused
	bs := waitDeadLetters(t, p, base, "tok-b", "", 1)
	for _, l := range bs {
		if l["scope"] != "project:b" || strings.Contains(fmt.Sprint(l), refused.ID) {
			t.Fatalf("b's list holds %v", l)
		}
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/deadletters?scope=project:a", nil); code != 403 {
		t.Fatalf("b naming project:a: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-b", "GET", "/v1/deadletters?scope=project", nil); code != 200 || strings.Contains(fmt.Sprint(m), refused.ID) {
		t.Fatalf("b listing the project kind: %d %v", code, m)
	}
	// ?type= selects (a type no letter has: none); an empty type, a bad
	// cursor, limit or scope: 400
	for _, l := range waitDeadLetters(t, p, base, "tok-a", "?type="+url.QueryEscape(string(events.SearchQuotaReserved)), 1) {
		if l["event_type"] != string(events.SearchQuotaReserved) {
			t.Fatalf("?type=%s lists %v", events.SearchQuotaReserved, l)
		}
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/deadletters?type=nope.v1", nil); code != 200 || len(m["dead_letters"].([]any)) != 0 {
		t.Fatalf("?type=nope.v1: %d %v", code, m)
	}
	// an empty cursor (the last page's next_cursor) is the first page, as
	// on every list (it was a 400: a walkthrough, 2026-11-30)
	if code, m := call(t, base, "tok-a", "GET", "/v1/deadletters?cursor=", nil); code != 200 || len(m["dead_letters"].([]any)) == 0 {
		t.Fatalf("?cursor= : %d %v; want the first page", code, m)
	}
	for _, q := range []string{"?type=", "?cursor=project:a/1", "?limit=0", "?scope=planet:x"} {
		if code, m := call(t, base, "tok-a", "GET", "/v1/deadletters"+q, nil); code != 400 {
			t.Fatalf("GET /v1/deadletters%s: %d %v; want 400", q, code, m)
		}
	}
	// the admin's list, a letter at a time: every letter once, a's then
	// b's (by scope), newest first within a scope
	all := waitDeadLetters(t, p, base, "tok-admin", "", len(as)+len(bs))
	var paged []map[string]any
	cursor := ""
	for i := 0; ; i++ {
		q := "?limit=1"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		code, m := call(t, base, "tok-admin", "GET", "/v1/deadletters"+q, nil)
		if code != 200 || i > len(all) {
			t.Fatalf("page %d: %d %v", i, code, m)
		}
		for _, l := range m["dead_letters"].([]any) {
			paged = append(paged, l.(map[string]any))
		}
		if cursor, _ = m["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if fmt.Sprint(paged) != fmt.Sprint(all) || len(all) != len(as)+len(bs) || all[0]["scope"] != "project:a" || all[len(all)-1]["scope"] != "project:b" {
		t.Fatalf("paged %v\nwhole %v", paged, all)
	}
	for i := 1; i < len(all); i++ {
		if all[i]["scope"] == all[i-1]["scope"] && fmt.Sprint(all[i]["dead_lettered_at"]) > fmt.Sprint(all[i-1]["dead_lettered_at"]) {
			t.Fatalf("not newest first: %v before %v", all[i-1], all[i])
		}
	}
}

// ?key= lists one entity's letters: an integrator driving two searches
// through POST /v1/events (every step a 202) finds the refusals of one of
// them by its key, <scope>/<id> as a letter shows it, and not the
// other's (before, the parameter was ignored and only ?type= and ?scope=
// narrowed the list: a tree-search walkthrough, 2026-12-07). A key that
// is not <scope>/<id> is a 400 naming key, one of a scope the token does
// not read a 403 naming key, as ?scope= is.
func TestDeadLettersOfOneKey(t *testing.T) {
	p, _, base := scopedServer(t)
	var refused []string
	for _, id := range []string{"s-one", "s-two"} {
		evs := quotaSearchIn(t, "project:a", id)
		for _, e := range evs {
			if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{e}); code != 202 {
				t.Fatalf("%s's %s: %d %v", id, e.Type, code, m)
			}
		}
		refused = append(refused, evs[len(evs)-1].ID)
	}
	waitDeadLetters(t, p, base, "tok-a", "", 2)
	one := waitDeadLetters(t, p, base, "tok-a", "?key="+url.QueryEscape("project:a/s-one"), 1)
	if len(one) != 1 || one[0]["event_id"] != refused[0] || one[0]["key"] != "project:a/s-one" {
		t.Fatalf("?key=project:a/s-one lists %v; want only %s", one, refused[0])
	}
	if code, m := call(t, base, "tok-a", "GET", "/v1/deadletters?key="+url.QueryEscape("project:a/s-none"), nil); code != 200 || len(m["dead_letters"].([]any)) != 0 {
		t.Fatalf("?key= of a search without letters: %d %v", code, m)
	}
	for q, want := range map[string]struct {
		code  int
		token string
	}{
		"s-one":            {400, "tok-a"},
		"project:a/":       {400, "tok-a"},
		"planet:x/s-one":   {400, "tok-a"},
		"":                 {400, "tok-a"},
		"project:a/s-one":  {403, "tok-b"},
		"project:b/B-ONLY": {200, "tok-b"},
	} {
		code, m := call(t, base, want.token, "GET", "/v1/deadletters?key="+url.QueryEscape(q), nil)
		if code != want.code || code != 200 && m["parameter"] != "key" {
			t.Fatalf("?key=%s as %s: %d %v; want %d naming key", q, want.token, code, m, want.code)
		}
	}
}

// deadLetterIDs pages through GET /v1/deadletters?<query> on base as token
// and returns the event ids of the sessions processor's letters, in the
// order listed, and every letter's scope.
func deadLetterIDs(t *testing.T, base, token, query string) (ids []string, scopes map[string]bool) {
	t.Helper()
	scopes = map[string]bool{}
	cursor := ""
	for i := 0; i < 100; i++ {
		q := "?" + query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		code, body, _ := fetch(t, base, token, "/v1/deadletters"+q)
		var page httpapi.DeadLetterList
		if err := json.Unmarshal(body, &page); code != 200 || err != nil {
			t.Fatalf("GET /v1/deadletters%s as %s: %d %s", q, token, code, body)
		}
		for _, e := range page.DeadLetters {
			scopes[e.Scope] = true
			if strings.HasPrefix(e.Handler, sessions.Name+"@") {
				ids = append(ids, e.EventID)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return ids, scopes
		}
	}
	t.Fatalf("GET /v1/deadletters?%s: more than 100 pages", query)
	return nil, nil
}

// On a cluster each member's store holds the letters of its partitions of
// chronicle.deadletter: GET /v1/deadletters asks every member for its page
// after the cursor and merges them by key, so any member lists every
// letter of the token's scopes once, in the same order, and none of
// another scope's.
func TestDeadLetterListCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	aEnvs, _ := sessionIn(t, 3, "project:a", "A")
	const n = 12
	for i := 0; i < n; i++ {
		orphan := aEnvs[len(aEnvs)-1] // a completion of a session that never started
		orphan.SessionID, orphan.ID = fmt.Sprintf("never-%02d", i), fmt.Sprintf("orphan-a-%02d", i)
		if code, m := call(t, ms[i%2].srv.URL, "tok-a", "POST", "/v1/events", []events.Envelope{orphan}); code != 202 {
			t.Fatalf("orphan %d: %d %v", i, code, m)
		}
	}
	bEnvs, _ := sessionIn(t, 5, "project:b", "B")
	orphanB := bEnvs[len(bEnvs)-1]
	orphanB.SessionID, orphanB.ID = "never-b", "orphan-b"
	if code, m := call(t, m1.srv.URL, "tok-b", "POST", "/v1/events", []events.Envelope{orphanB}); code != 202 {
		t.Fatalf("b's orphan: %d %v", code, m)
	}
	var want []string
	deadline := time.Now().Add(time.Minute)
	for {
		// b's letter too: it is applied on its own partition, in its own
		// time (under -race CI listed tok-b's [] once tok-a had its 12)
		b, _ := deadLetterIDs(t, m1.srv.URL, "tok-b", "limit=500")
		if want, _ = deadLetterIDs(t, m1.srv.URL, "tok-a", "limit=500"); len(want) == n && len(b) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tok-a lists %v, tok-b %v; want %d letters and 1", want, b, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// each store alone holds part of them
	for _, m := range ms {
		code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/deadletters?limit=500", httpapi.ForwardedHeader, "test")
		var page httpapi.DeadLetterList
		_ = json.Unmarshal(body, &page)
		if code != 200 || len(page.DeadLetters) == 0 || len(page.DeadLetters) >= len(want) {
			t.Fatalf("%s's own store lists %d of %d letters (%d): the test needs them spread", m.name, len(page.DeadLetters), len(want), code)
		}
	}
	for _, m := range ms {
		for _, limit := range []string{"limit=5", "limit=1", ""} {
			ids, scopes := deadLetterIDs(t, m.srv.URL, "tok-a", limit)
			if fmt.Sprint(ids) != fmt.Sprint(want) || len(scopes) != 1 || !scopes["project:a"] {
				t.Fatalf("%s, %s: tok-a lists %v in %v, want %v", m.name, limit, ids, scopes, want)
			}
		}
		if ids, scopes := deadLetterIDs(t, m.srv.URL, "tok-b", "limit=5"); fmt.Sprint(ids) != "[orphan-b]" || len(scopes) != 1 || !scopes["project:b"] {
			t.Fatalf("%s: tok-b lists %v in %v", m.name, ids, scopes)
		}
	}
}
