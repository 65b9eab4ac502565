package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFrictions checks the smaller frictions of issue 11 on a real
// pipeline behind tokens: strict memory bodies, limit bounds, scope
// filters naming one scope, GET /v1/whoami, and the request log.
func TestFrictions(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "agent-a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
		{Name: "reader", SHA256: access.Hash("tok-reader"), Read: []string{"*"}},
	}}
	var logBuf syncBuffer
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens, RequestLog: slog.New(slog.NewJSONHandler(&logBuf, nil))}).Handler()))
	defer srv.Close()
	base := srv.URL
	errOf := func(m map[string]any) string { s, _ := m["error"].(string); return s }

	t.Run("unknown fields", func(t *testing.T) {
		code, m := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "T", "description": "D", "content": "C", "outcome": "success", "titel": "typo"})
		if code != 400 || errOf(m) != `body: unknown field "titel"` {
			t.Errorf("POST /v1/memories with titel: %d %q, want 400 body: unknown field \"titel\"", code, errOf(m))
		}
		code, m = call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "T", "description": "D", "content": "C", "outcome": "success", "tags": 3})
		if code != 400 || errOf(m) != `body: "tags": got number, want array` {
			t.Errorf("POST /v1/memories with tags 3: %d %q", code, errOf(m))
		}
		// the other strict bodies word it the same way
		code, m = call(t, base, "tok-a", "POST", "/v1/dags", map[string]any{"tools": []string{"think"}, "tool": "x"})
		if code != 400 || errOf(m) != `body: unknown field "tool"` {
			t.Errorf("POST /v1/dags with tool: %d %q", code, errOf(m))
		}
		code, m = call(t, base, "tok-a", "POST", "/v1/memories/m1/feedback", map[string]any{"comment": "no verdict"})
		if code != 400 || errOf(m) != `body: missing property "helpful" (true or false)` || m["pointer"] != "/helpful" {
			t.Errorf("feedback without helpful: %d %q at %v", code, errOf(m), m["pointer"])
		}
		code, m = call(t, base, "tok-a", "POST", "/v1/memories/m1/feedback", map[string]any{"helpful": true, "reason": "x"})
		if code != 400 || errOf(m) != `body: unknown field "reason"` {
			t.Errorf("feedback with reason: %d %q", code, errOf(m))
		}
	})

	t.Run("limit", func(t *testing.T) {
		for _, route := range []string{"/v1/memories/search", "/v1/patterns/search"} {
			for _, l := range []string{"0", "-3", "21", "x"} {
				code, m := call(t, base, "tok-a", "GET", route+"?query=q&limit="+l, nil)
				if want := `limit: "` + l + `" is not an integer from 1 to 20 (absent: 5)`; code != 400 || errOf(m) != want {
					t.Errorf("%s limit=%s: %d %q, want 400 %q", route, l, code, errOf(m), want)
				}
			}
		}
		if code, m := call(t, base, "tok-a", "GET", "/v1/sessions?limit=0", nil); code != 400 || !strings.HasPrefix(errOf(m), `limit: "0" is not an integer from 1 to 500`) {
			t.Errorf("sessions limit=0: %d %q", code, errOf(m))
		}
	})

	t.Run("whoami", func(t *testing.T) {
		for tok, want := range map[string]httpapi.WhoAmI{
			"tok-a":      {Name: "agent-a", Read: []string{"project:a"}, Write: []string{"project:a"}, DefaultWriteScope: "project:a"},
			"tok-admin":  {Name: "admin", Read: []string{"*"}, Write: []string{"*"}, DefaultWriteScope: "org:default"},
			"tok-reader": {Name: "reader", Read: []string{"*"}, Write: []string{}, DefaultWriteScope: ""},
		} {
			code, m := call(t, base, tok, "GET", "/v1/whoami", nil)
			b, _ := json.Marshal(m)
			wb, _ := json.Marshal(want)
			var got, exp any
			_ = json.Unmarshal(b, &got)
			_ = json.Unmarshal(wb, &exp)
			if code != 200 || string(mustJSON(got)) != string(mustJSON(exp)) {
				t.Errorf("whoami %s: %d %s, want %s", tok, code, b, wb)
			}
		}
		if code, _ := call(t, base, "", "GET", "/v1/whoami", nil); code != 401 {
			t.Errorf("whoami without a token: %d, want 401", code)
		}
	})

	t.Run("scope filter", func(t *testing.T) {
		text := "Rotate the staging vault password before the quarterly audit"
		for _, sc := range []string{"project:a", "project:b", "team:a"} {
			code, m := call(t, base, "tok-admin", "POST", "/v1/memories", map[string]any{"title": "Vault rotation " + sc, "description": text, "content": text + " in " + sc, "outcome": "success", "scope": sc})
			if code != 202 {
				t.Fatalf("record in %s: %d %v", sc, code, m)
			}
		}
		scopesOf := func(filter string) []string {
			var res search.Result
			q := url.Values{"query": {text}, "min_confidence": {"0"}, "limit": {"20"}, "scope": {filter}}
			if code := getAs(t, base, "tok-admin", "/v1/memories/search?"+q.Encode(), &res); code != 200 {
				t.Fatalf("search scope=%s: %d", filter, code)
			}
			var out []string
			for _, h := range res.Memories {
				out = append(out, h.Scope)
			}
			return out
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(scopesOf("all")) < 3 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		for filter, want := range map[string]string{"all": "project:a,project:b,team:a", "project": "project:a,project:b", "project:a": "project:a", "team:a": "team:a", "project:zz": ""} {
			got := scopesOf(filter)
			slices.Sort(got)
			if strings.Join(got, ",") != want {
				t.Errorf("search scope=%s: scopes %v, want %s", filter, got, want)
			}
		}
		// a token reading project:a that names project:b is refused (403,
		// as the learned stream answers), not answered an empty list that
		// reads as "nothing matched"
		var res search.Result
		if code := getAs(t, base, "tok-a", "/v1/memories/search?min_confidence=0&scope=project:b&query="+url.QueryEscape(text), &res); code != 403 || len(res.Memories) != 0 {
			t.Errorf("project:a's token searching scope=project:b: %d %+v; want 403", code, res.Memories)
		}
		code, m := call(t, base, "tok-a", "GET", "/v1/memories/search?query=q&scope=proj:a", nil)
		if code != 400 || !strings.Contains(errOf(m), `scope: "proj:a" is not a kind (project, team, org, all) or a scope`) {
			t.Errorf("scope=proj:a: %d %q", code, errOf(m))
		}
	})

	t.Run("sessions scope filter", func(t *testing.T) {
		for i, sc := range []string{"project:a", "project:b"} {
			envs, _ := sessionIn(t, i, sc, "secret")
			if err := p.Producer.Publish(t.Context(), envs...); err != nil {
				t.Fatal(err)
			}
		}
		waitCaughtUp(t, p)
		for filter, want := range map[string]string{"": "project:a,project:b", "all": "project:a,project:b", "project": "project:a,project:b", "project:b": "project:b", "team": ""} {
			var page struct {
				Sessions []struct {
					Scope string `json:"scope"`
				} `json:"sessions"`
			}
			if code := getAs(t, base, "tok-admin", "/v1/sessions?scope="+url.QueryEscape(filter), &page); code != 200 {
				t.Fatalf("sessions scope=%s: %d", filter, code)
			}
			var got []string
			for _, v := range page.Sessions {
				got = append(got, v.Scope)
			}
			slices.Sort(got)
			if strings.Join(got, ",") != want {
				t.Errorf("sessions scope=%s: %v, want %s", filter, got, want)
			}
		}
		if code, m := call(t, base, "tok-admin", "GET", "/v1/sessions?scope=galaxy", nil); code != 400 || !strings.HasPrefix(errOf(m), `scope: "galaxy" is not a kind`) {
			t.Errorf("sessions scope=galaxy: %d %q", code, errOf(m))
		}
		// one scope the token does not read: 403, as the searches and the
		// learned stream answer (it was 200 with an empty list)
		if code, m := call(t, base, "tok-a", "GET", "/v1/sessions?scope=project:b", nil); code != 403 || errOf(m) != "scope: this token may not read project:b" {
			t.Errorf("project:a's token listing sessions of scope=project:b: %d %q; want 403", code, errOf(m))
		}
		if code, _ := call(t, base, "tok-a", "GET", "/v1/sessions?scope=project:a", nil); code != 200 {
			t.Errorf("project:a's token listing sessions of scope=project:a: %d", code)
		}
	})

	t.Run("schema error texts", func(t *testing.T) {
		ev := func(data any) map[string]any {
			return map[string]any{"specversion": "1.0", "id": "f-1", "source": "test", "type": "memory.recorded.v1", "scope": "project:a", "data": data}
		}
		full := map[string]any{"memory_id": "m1", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit"}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for a, b := range full {
				m[a] = b
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		for _, c := range []struct {
			body any
			want string
		}{
			{ev(with("memory_id", nil)), `event 0: /data/memory_id: missing property 'memory_id'`},
			{ev(with("title", 5)), `event 0: /data/title: got number, want string`},
			{ev(with("outcome", "meh")), `event 0: /data/outcome: value must be one of 'success', 'failure'`},
			{ev(with("zzz", 1)), `event 0: /data/zzz: additional properties 'zzz' not allowed`},
			{ev(with("title", "")), `event 0: /data/title: minLength: got 0, want 1`},
			{ev([]any{}), `event 0: /data: got array, want object`},
		} {
			code, m := call(t, base, "tok-a", "POST", "/v1/events", c.body)
			if code != 400 || errOf(m) != c.want || strings.Contains(errOf(m), "<nil>") {
				t.Errorf("POST /v1/events: %d %q, want 400 %q", code, errOf(m), c.want)
			}
		}
	})

	t.Run("request log", func(t *testing.T) {
		call(t, base, "tok-a", "GET", "/v1/sessions?scope=project:a&limit=2", nil)
		call(t, base, "chr_wrong", "GET", "/v1/sessions", nil)
		fetch(t, base, "tok-a", "/v1/sessions/no-such-session", httpapi.ForwardedHeader, "member-x", httpapi.FanOutHeader, "1")
		// a POST /v1/events names its events' scopes, the token's
		// default write scope filled in: one event without a scope, one
		// of a scope the token may not write (a 403, logged with it)
		a, _ := sessionIn(t, 0, "", "log")
		b, _ := sessionIn(t, 1, "project:b", "log")
		call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{a[0], b[0]})
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			lines = append(lines, m)
		}
		if strings.Contains(logBuf.String(), "tok-a") || strings.Contains(logBuf.String(), "chr_wrong") {
			t.Errorf("the request log carries a token: %s", logBuf.String())
		}
		n := len(lines)
		if n < 4 {
			t.Fatalf("request log: %d lines", n)
		}
		ok, bad, probe, post := lines[n-4], lines[n-3], lines[n-2], lines[n-1]
		if post["path"] != "/v1/events" || post["status"] != 403.0 || post["scope"] != "project:a,project:b" {
			t.Errorf("log line of a POST /v1/events: %v, want scope project:a,project:b", post)
		}
		if probe["status"] != 404.0 || probe["forwarded_by"] != "member-x" || probe["fan_out"] != true {
			t.Errorf("log line of a member's fan-out probe: %v", probe)
		}
		if _, has := ok["forwarded_by"]; has {
			t.Errorf("log line of a client's request names a forwarding member: %v", ok)
		}
		if ok["msg"] != "http request" || ok["method"] != "GET" || ok["path"] != "/v1/sessions" || ok["status"] != 200.0 || ok["token"] != "agent-a" || ok["scope"] != "project:a" || ok["bytes"].(float64) <= 0 || ok["duration_ms"] == nil {
			t.Errorf("log line of an answered request: %v", ok)
		}
		if bad["status"] != 401.0 || bad["token"] != "" {
			t.Errorf("log line of a 401: %v", bad)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// getAs GETs path with token and decodes the JSON answer into v.
func getAs(t *testing.T, base, token, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}
