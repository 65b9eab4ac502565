package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// TestReadsOnEveryMember: the read routes of the 2026-12-07 walkthrough
// on two members (4 partitions, sessions on both, the memory bank on one)
// answer on every member what one instance answers. GET /v1/memories
// paged 3 at a time lists the owner's whole bank once, in key order, for
// a one-scope and a two-scope token, from either member; GET
// /v1/patterns/{id} and its history (paged one record at a time) are the
// same bodies everywhere; GET /v1/deadletters?key= gives each session's
// one letter everywhere; GET /v1/sessions/{id}/events marks the refused
// second completion, and nothing else, whichever member owns the
// session; memory_list, pattern_get and pattern_history over /mcp answer
// their route's body on every member, the memory bank's non-owner
// included. A scope the token does not read is refused with the same
// status and body everywhere.
func TestReadsOnEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ms, sids := twoMembersWithSessions(ctx, t, 8, "clreads")
	m1 := ms[0]
	waitCluster(t, ms)

	// sessions on both members' partitions, each with a refused second
	// completion (a dead letter keyed by the session)
	ownerOf := func(key string) string {
		p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(key)}, 4))
		for _, m := range ms {
			for _, op := range m.p.Runner.Ownership().Partitions {
				if op.Topic == string(events.TopicSessions) && op.Partition == p {
					return m.name
				}
			}
		}
		return ""
	}
	sessOwners := map[string]int{}
	again := map[string]string{} // session id → the refused event's id
	for i, sid := range sids {
		sessOwners[ownerOf(events.EntityKey("project:a", sid))]++
		envs, _ := sessionIn(t, i, "project:a", "clreads")
		var e events.Envelope
		for _, x := range envs {
			if x.Type == events.SessionCompleted {
				e = x
			}
		}
		if e.ID == "" {
			t.Fatalf("sample session %s has no completion", sid)
		}
		e.ID += "-again"
		again[sid] = e.ID
		if err := m1.p.Producer.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if len(sessOwners) != 2 || sessOwners[""] > 0 {
		t.Fatalf("sessions by owner %v: the test needs sessions on both members", sessOwners)
	}

	// memories of two scopes, recorded through both members
	for i := 0; i < 10; i++ {
		sc, via := "project:a", ms[(i/2)%2]
		if i%2 == 1 {
			sc = "project:b"
		}
		body := map[string]any{"title": fmt.Sprintf("cluster read %d", i), "description": "paged from every member",
			"content": fmt.Sprintf("memory %d of the cluster read test", i), "outcome": "success", "scope": sc}
		if code, rec := call(t, via.srv.URL, "tok-ab", "POST", "/v1/memories", body); code != http.StatusAccepted {
			t.Fatalf("POST /v1/memories via %s: %d %v", via.name, code, rec)
		}
	}
	// the letters as one instance holding every partition lists them: the
	// union of the members' stores, in row key order (read from the
	// stores, not the route under test)
	held := map[string]int{} // letters by member, at the last allLetters
	allLetters := func() []string {
		t.Helper()
		seen := map[string]bool{}
		for _, m := range ms {
			l, _, err := deadletter.ListScopedMatching(m.p.Store, []string{"project:a"}, func(sc string) bool { return sc == "project:a" }, 100000, "",
				func(deadletter.Entry) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l {
				seen[e.Cursor()] = true
			}
			held[m.name] = len(l)
		}
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(allLetters()) < len(sids) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d second completions dead-lettered within 60s", len(allLetters()), len(sids))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitCluster(t, ms)

	var bank *member
	for _, m := range ms {
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicMemories) {
				bank = m
			}
		}
	}
	if bank == nil {
		t.Fatal("no member owns the memory bank")
	}

	// get is a GET's status and body; same fails unless every member
	// answers path with one status and body, which it returns
	get := func(m *member, token, path string) (int, string) {
		t.Helper()
		code, b, _ := fetch(t, m.srv.URL, token, path)
		return code, string(b)
	}
	same := func(token, path string) (int, string) {
		t.Helper()
		code, body := get(ms[0], token, path)
		for _, m := range ms[1:] {
			if c, b := get(m, token, path); c != code || b != body {
				t.Fatalf("GET %s as %s: %s answers %d %s\n%s answers %d %s", path, token, ms[0].name, code, body, m.name, c, b)
			}
		}
		return code, body
	}

	// GET /v1/memories: the bank as its owner's store lists it (one
	// instance's answer), paged 3 at a time from every member
	wantMems := func(scopes ...string) []string {
		t.Helper()
		allow := func(sc string) bool {
			for _, s := range scopes {
				if s == sc {
					return true
				}
			}
			return false
		}
		list, next, err := memories.List(bank.p.Store, scopes, allow, 100000, 1<<30, "")
		if err != nil || next != "" {
			t.Fatalf("the bank's list: %v (next %q)", err, next)
		}
		var ids []string
		for _, m := range list {
			ids = append(ids, m.Scope+"/"+m.ID)
		}
		return ids
	}
	pageMems := func(m *member, token, query string) []string {
		t.Helper()
		var ids []string
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			path := "/v1/memories?limit=3" + query
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			code, body := get(m, token, path)
			var page memories.ListPage
			if code != 200 || json.Unmarshal([]byte(body), &page) != nil || pages > 50 {
				t.Fatalf("%s: GET %s as %s: %d %s", m.name, path, token, code, body)
			}
			if len(page.Memories) != 3 && page.NextCursor != "" || len(page.Memories) > 3 {
				t.Fatalf("%s: GET %s: %d memories with next_cursor %q, want 3 on every page but the last", m.name, path, len(page.Memories), page.NextCursor)
			}
			for _, mem := range page.Memories {
				k := mem.Scope + "/" + mem.ID
				if seen[k] {
					t.Fatalf("%s: GET %s lists %s again", m.name, path, k)
				}
				seen[k] = true
				ids = append(ids, k)
			}
			if cursor = page.NextCursor; cursor == "" {
				return ids
			}
		}
	}
	for _, c := range []struct {
		token, query string
		scopes       []string
	}{
		{"tok-a", "", []string{"project:a"}},
		{"tok-ab", "", []string{"project:a", "project:b"}},
		{"tok-ab", "&scope=project:b", []string{"project:b"}},
	} {
		want := wantMems(c.scopes...)
		if len(want) < 4 {
			t.Fatalf("%v: %d memories in the bank, want more than a page", c.scopes, len(want))
		}
		t.Logf("%v: %d memories, bank on %s", c.scopes, len(want), bank.name)
		for _, m := range ms {
			if got := pageMems(m, c.token, c.query); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s (bank on %s): GET /v1/memories%s as %s paged by 3:\n%v\nwant the bank's\n%v", m.name, bank.name, c.query, c.token, got, want)
			}
		}
	}

	// a scope the token does not read, or bad parameters: refused alike
	// everywhere
	for _, path := range []string{"/v1/memories?scope=project:b", "/v1/deadletters?key=project:b/" + sids[0], "/v1/deadletters?scope=project:b"} {
		if code, body := same("tok-a", path); code != http.StatusForbidden {
			t.Errorf("GET %s as tok-a: %d %s, want 403", path, code, body)
		}
	}
	for path, want := range map[string]int{"/v1/memories?cursor=nonsense": 400, "/v1/memories?limit=0": 400,
		"/v1/deadletters?key=nonsense": 400, "/v1/patterns/pat-none": 404, "/v1/patterns/pat-none/history": 404} {
		if code, body := same("tok-a", path); code != want {
			t.Errorf("GET %s as tok-a: %d %s, want %d", path, code, body, want)
		}
	}
	for _, sid := range sids {
		if code, body := same("tok-b", "/v1/sessions/"+url.PathEscape(sid)+"/events"); code != http.StatusNotFound {
			t.Errorf("GET /v1/sessions/%s/events as tok-b: %d %s, want 404", sid, code, body)
		}
	}

	// patterns: the same body everywhere, the history paged one record
	// at a time the same, its records the row's counts
	var pats []sessions.Pattern
	if err := sessions.EachPattern(m1.p.Store, func(p sessions.Pattern) bool {
		if p.Scope == "project:a" {
			pats = append(pats, p)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(pats) == 0 {
		t.Fatal("no pattern of project:a")
	}
	t.Logf("%d patterns of project:a; sessions by owner %v", len(pats), sessOwners)
	histories := map[string][]string{}
	for _, p := range pats {
		code, body := same("tok-a", "/v1/patterns/"+p.ID)
		var v struct {
			ID           string `json:"id"`
			SessionCount int    `json:"session_count"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &v) != nil || v.ID != p.ID || v.SessionCount != p.SessionCount {
			t.Fatalf("GET /v1/patterns/%s: %d %s, want its %d sessions", p.ID, code, body, p.SessionCount)
		}
		for _, suffix := range []string{"", "/history"} {
			if code, body := same("tok-b", "/v1/patterns/"+p.ID+suffix); code != http.StatusNotFound {
				t.Errorf("GET /v1/patterns/%s%s as tok-b: %d %s, want 404", p.ID, suffix, code, body)
			}
		}
		cursor, seen := "", map[string]bool{}
		for pages := 0; ; pages++ {
			path := "/v1/patterns/" + p.ID + "/history?limit=1"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			code, body := same("tok-a", path)
			var h struct {
				Records []struct {
					Position     string `json:"position"`
					SessionCount int    `json:"session_count"`
				} `json:"records"`
				RecordCount int    `json:"record_count"`
				Matches     bool   `json:"matches"`
				NextCursor  string `json:"next_cursor"`
			}
			if code != 200 || json.Unmarshal([]byte(body), &h) != nil || len(h.Records) != 1 || !h.Matches || pages > 50 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			if seen[h.Records[0].Position] {
				t.Fatalf("GET %s lists %s again", path, h.Records[0].Position)
			}
			seen[h.Records[0].Position] = true
			histories[p.ID] = append(histories[p.ID], body)
			if cursor = h.NextCursor; cursor == "" {
				if len(seen) != h.RecordCount || h.Records[0].SessionCount != p.SessionCount {
					t.Fatalf("pattern %s: %d records paged of %d, the last at %d sessions, want %d", p.ID, len(seen), h.RecordCount, h.Records[0].SessionCount, p.SessionCount)
				}
				break
			}
		}
	}

	// GET /v1/deadletters paged 3 at a time: every letter once, in key
	// order, the same pages from every member
	wantLetters := allLetters()
	if len(held) != 2 || held[ms[0].name] == 0 || held[ms[1].name] == 0 {
		t.Fatalf("letters by member %v: the test needs letters on both", held)
	}
	t.Logf("%d letters, by member %v", len(wantLetters), held)
	for _, m := range ms {
		var got []string
		cursor := ""
		for pages := 0; pages == 0 || cursor != ""; pages++ {
			path := "/v1/deadletters?limit=3"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			code, body := get(m, "tok-a", path)
			var page deadletter.ListPage
			if code != 200 || json.Unmarshal([]byte(body), &page) != nil || pages > 50 ||
				len(page.DeadLetters) != 3 && page.NextCursor != "" || len(page.DeadLetters) > 3 {
				t.Fatalf("%s: GET %s: %d %s", m.name, path, code, body)
			}
			for _, e := range page.DeadLetters {
				got = append(got, e.Cursor())
			}
			cursor = page.NextCursor
		}
		if strings.Join(got, " ") != strings.Join(wantLetters, " ") {
			t.Errorf("%s: GET /v1/deadletters paged by 3:\n%v\nwant the stores' letters in key order\n%v", m.name, got, wantLetters)
		}
	}

	// dead letters and the marks of the sessions' events, on both owners'
	// sessions, from every member
	for _, sid := range sids {
		key := events.EntityKey("project:a", sid)
		code, body := same("tok-a", "/v1/deadletters?key="+url.QueryEscape(key))
		var l struct {
			DeadLetters []struct {
				Key     string `json:"key"`
				EventID string `json:"event_id"`
			} `json:"dead_letters"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &l) != nil || len(l.DeadLetters) != 1 || l.DeadLetters[0].Key != key || l.DeadLetters[0].EventID != again[sid] {
			t.Errorf("GET /v1/deadletters?key=%s: %d %s, want the letter of %s", key, code, body, again[sid])
		}
		for _, scan := range []bool{false, true} {
			restore := func() {}
			if scan {
				restore = httpapi.ScanSessionEvents()
			}
			code, body = same("tok-a", "/v1/sessions/"+url.PathEscape(sid)+"/events")
			restore()
			markedOnce(t, sid, ownerOf(key), again[sid], scan, code, body)
		}
	}

	// the MCP tools: their route's body on every member
	notBank := 0
	for _, m := range ms {
		if m != bank {
			notBank++
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "clreads", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: m.srv.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{"tok-a", http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		viaTool := func(tool string, args map[string]any) string {
			t.Helper()
			res := mcptest.Call(t, cs, tool, args)
			if res.IsError {
				t.Fatalf("%s (bank on %s): %s %v: %s", m.name, bank.name, tool, args, mcptest.Text(res))
			}
			b, _ := json.Marshal(res.StructuredContent)
			return string(b)
		}
		canon := func(body string) string {
			var v any
			_ = json.Unmarshal([]byte(body), &v)
			b, _ := json.Marshal(v)
			return string(b)
		}
		cursor := ""
		for pages := 0; pages == 0 || cursor != ""; pages++ {
			args, path := map[string]any{"limit": 3}, "/v1/memories?limit=3"
			if cursor != "" {
				args["cursor"], path = cursor, path+"&cursor="+url.QueryEscape(cursor)
			}
			got := viaTool("memory_list", args)
			_, body := get(ms[0], "tok-a", path)
			if got != canon(body) || pages > 50 {
				t.Fatalf("%s (bank on %s): memory_list %v:\n%s\nGET %s:\n%s", m.name, bank.name, args, got, path, body)
			}
			var page memories.ListPage
			_ = json.Unmarshal([]byte(got), &page)
			cursor = page.NextCursor
		}
		mcptest.WantToolError(t, mcptest.Call(t, cs, "memory_list", map[string]any{"scope": "project:b"}), "memory_list", "scope")
		for _, p := range pats {
			_, body := get(ms[0], "tok-a", "/v1/patterns/"+p.ID)
			if got := viaTool("pattern_get", map[string]any{"pattern_id": p.ID}); got != canon(body) {
				t.Fatalf("%s: pattern_get %s:\n%s\nwant\n%s", m.name, p.ID, got, body)
			}
			if got := viaTool("pattern_history", map[string]any{"pattern_id": p.ID, "limit": 1}); got != canon(histories[p.ID][0]) {
				t.Fatalf("%s: pattern_history %s:\n%s\nwant\n%s", m.name, p.ID, got, histories[p.ID][0])
			}
		}
		cs.Close()
	}
	if notBank != 1 {
		t.Fatalf("%d members without the memory bank: the test needs one", notBank)
	}
}

// markedOnce fails t unless body, a 200 of GET /v1/sessions/{sid}/events
// (the session owned by owner; scan: read by the scan, else from the
// index), marks the event refused once with its letter and no other.
func markedOnce(t *testing.T, sid, owner, refused string, scan bool, code int, body string) {
	t.Helper()
	var a struct {
		Source string `json:"source"`
		Events []struct {
			Position     string              `json:"position"`
			Event        struct{ ID string } `json:"event"`
			DeadLettered []json.RawMessage   `json:"dead_lettered"`
		} `json:"events"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &a) != nil {
		t.Fatalf("GET /v1/sessions/%s/events (scan %v): %d %s", sid, scan, code, body)
	}
	marked := 0
	for _, e := range a.Events {
		switch {
		case e.Event.ID == refused && len(e.DeadLettered) == 1:
			marked++
		case e.Event.ID == refused || len(e.DeadLettered) > 0:
			t.Errorf("session %s (owned by %s, source %s): event %s at %s marked %s", sid, owner, a.Source, e.Event.ID, e.Position, e.DeadLettered)
		}
	}
	if marked != 1 {
		t.Errorf("session %s (owned by %s, source %s): the refused %s marked %d times, want once", sid, owner, a.Source, refused, marked)
	}
}
