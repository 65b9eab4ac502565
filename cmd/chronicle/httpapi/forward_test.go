package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// member is one instance of a test cluster: its pipeline, its API and the
// HTTP server at its advertised URL (swap replaces the handler, e.g. by one
// that never answers).
type member struct {
	p    *pipeline.Pipeline
	api  *httpapi.Server
	srv  *httptest.Server
	h    atomic.Value // http.Handler
	name string
}

func (m *member) swap(h http.Handler) { m.h.Store(&h) }

var clusterTokens = access.File{Tokens: []access.Token{
	{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
	{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
	{Name: "admin", SHA256: access.Hash("tok-admin"), Read: []string{"*"}, Write: []string{"*"}},
	// writes project:a, reads nothing (accesstest's WriteOnly caller)
	{Name: "wo", SHA256: access.Hash("tok-wo"), Write: []string{"project:a"}},
	// two scopes, default write scope project:a
	{Name: "ab", SHA256: access.Hash("tok-ab"), Read: []string{"project:a", "project:b"}, Write: []string{"project:a", "project:b"}},
	// reads both, writes project:a only
	{Name: "ab-ro", SHA256: access.Hash("tok-ab-ro"), Read: []string{"project:a", "project:b"}, Write: []string{"project:a"}},
	// writes project:a, reads nothing
	{Name: "wo", SHA256: access.Hash("tok-wo"), Write: []string{"project:a"}},
	// writes both, reads nothing (a write-only producer)
	{Name: "ab-wo", SHA256: access.Hash("tok-ab-wo"), Write: []string{"project:a", "project:b"}},
}}

// startMember starts an instance: the server listens first (its URL is
// the advertised one the pipeline joins the group with), then the
// pipeline, on brokers (nil: an embedded broker with 4 partitions).
func startMember(ctx context.Context, t testing.TB, name string, brokers []string, fwd time.Duration) *member {
	t.Helper()
	return startMemberTimeout(ctx, t, name, brokers, fwd, 0)
}

// startMemberTimeout is startMember with the processors' group session
// timeout set to sessionTimeout (0: franz-go's 45 s).
func startMemberTimeout(ctx context.Context, t testing.TB, name string, brokers []string, fwd, sessionTimeout time.Duration) *member {
	t.Helper()
	return startMemberTokens(ctx, t, name, brokers, fwd, sessionTimeout, &clusterTokens)
}

// startMemberTokens is startMemberTimeout with the token file tokens;
// each of configure is applied to the member's Server before its handler
// is made (an ingest budget, say), so nothing races its requests.
func startMemberTokens(ctx context.Context, t testing.TB, name string, brokers []string, fwd, sessionTimeout time.Duration, tokens *access.File, configure ...func(*httpapi.Server)) *member {
	t.Helper()
	m := &member{name: name}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*m.h.Load().(*http.Handler)).ServeHTTP(w, r)
	}))
	url := "http://" + m.srv.Listener.Addr().String()
	held := &processors.Holdings{} // as serve runs a member
	cfg := pipeline.Config{DataDir: t.TempDir(), Brokers: brokers, Partitions: 4, Holdings: held, SubscriberOpts: httpapi.MemberOpts(url, held), SessionTimeout: sessionTimeout}
	if brokers == nil {
		cfg.KafkaListen = "127.0.0.1:0"
	}
	p, err := pipeline.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	m.p = p
	m.api = &httpapi.Server{P: p, Tokens: tokens, Advertise: url, ForwardTimeout: fwd}
	for _, c := range configure {
		c(m.api)
	}
	m.swap(m.api.Handler())
	m.srv.Start()
	t.Cleanup(m.srv.Close)
	return m
}

// fetch sends a GET with token and returns status, body and the member
// that served it.
func fetch(t testing.TB, base, token, path string, hdr ...string) (int, []byte, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header.Get(httpapi.ServedByHeader)
}

// postJSON sends body (JSON) to base+path as token, with hdr's name/value
// pairs, and returns status and body.
func postJSON(t testing.TB, base, token, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// waitCluster waits until every member's GET /v1/cluster lists all of them
// with their URLs and the sessions topic's 4 partitions assigned, and
// every member caught up.
// workflowIDsOn returns n ids prefix-<i> whose workflow key in scope sits
// on a partition of chronicle.workflows that only member on owns (off does
// not), so a request sent to off must reach on; the test fails when the
// first 256 ids give fewer.
func workflowIDsOn(t testing.TB, on, off *member, scope, prefix string, n int) []string {
	t.Helper()
	owns := func(m *member, key string) bool {
		p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicWorkflows)).Partition(&kgo.Record{Key: []byte(key)}, 4))
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicWorkflows) && op.Partition == p {
				return true
			}
		}
		return false
	}
	var ids []string
	for i := 0; i < 256 && len(ids) < n; i++ {
		if id := fmt.Sprintf("%s-%d", prefix, i); owns(on, events.EntityKey(scope, id)) && !owns(off, events.EntityKey(scope, id)) {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		t.Fatalf("%d of %d %s ids on a partition of %s's only", len(ids), n, prefix, on.name)
	}
	return ids
}

func waitCluster(t testing.TB, ms []*member) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for _, m := range ms {
		for {
			code, body, _ := fetch(t, m.srv.URL, "tok-admin", "/v1/cluster")
			why := fmt.Sprintf("GET /v1/cluster: %d %s", code, body)
			if code == 200 {
				var v httpapi.ClusterView
				_ = json.Unmarshal(body, &v)
				var parts []int32
				urls := map[string]bool{}
				for _, mm := range v.Members {
					urls[mm.URL] = true
					parts = append(parts, mm.Assigned[string(events.TopicSessions)]...)
				}
				sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
				why = fmt.Sprintf("%s: members %+v", m.name, v.Members)
				ok := len(v.Members) == len(ms) && fmt.Sprint(parts) == "[0 1 2 3]" && !v.Rebalancing
				for _, o := range ms {
					ok = ok && urls[o.api.Advertise]
				}
				if ok {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal(why)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, m := range ms {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := m.p.WaitCaughtUp(cctx, nil)
		cancel()
		if err != nil {
			l, _ := m.p.Lag(context.Background())
			for _, x := range l {
				if x.Lag > 0 {
					t.Logf("%s lag %+v", m.name, x)
				}
			}
			pend, _ := m.p.Store.PendingOutbox(10)
			t.Logf("%s pending %d", m.name, len(pend))
			for _, e := range pend {
				t.Logf("pending %+v", e.Source)
			}
			t.Fatal(err)
		}
	}
}

// TestForwardingCluster: three instances on the embedded broker (4
// partitions), 12 tau-bench sessions of project:a and one memory. Every
// session (and its log) is readable from every instance with the same
// body, through the single-scope token (direct forward), the admin token
// with ?scope= (direct) and without (fan-out); each instance forwards
// some reads (another member served them). A token of project:b gets 404
// everywhere. The session list pages (limit 5) from every instance give
// all sessions once, in id order, with the same cursors. The memory (one
// partition, one owner) reads and is found by memory search from every
// instance. Tree searches read from everywhere, and a resume sent to an
// instance that does not own the search is applied by its owner; workflow
// updates sent to one instance are applied and answered by their owners,
// and forks into new workflows owned by other members answer their state
// (a second fork into the same id: 409). A forwarded request is
// never forwarded again. Then one member stops answering: reads of its
// partitions and the list answer 504 within the forward timeout, naming
// it; once its server is gone, 503.
func TestForwardingCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const fwd = time.Second
	m1 := startMember(ctx, t, "m1", nil, fwd)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), fwd)
	m3 := startMember(ctx, t, "m3", m1.p.Broker.Addrs(), fwd)
	ms := []*member{m1, m2, m3}

	var ids []string
	for i := 0; i < 12; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var searches []string
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("search-%d", i)
		if err := m1.p.Producer.Publish(ctx, pausedSearchIn(t, "project:a", id, "s3cret")...); err != nil {
			t.Fatal(err)
		}
		searches = append(searches, id)
	}
	code, rec := call(t, m2.srv.URL, "tok-a", "POST", "/v1/memories", map[string]any{"title": "forwarded memory", "description": "a memory read from every instance",
		"content": "check the partition owner first", "outcome": "success", "tags": []string{"cluster"}, "scope": "project:a"})
	if code != http.StatusAccepted {
		t.Fatalf("POST /v1/memories: %d %v", code, rec)
	}
	memID, _ := rec["id"].(string)
	waitCluster(t, ms)

	selfID := map[string]string{}
	for _, m := range ms {
		selfID[m.name] = m.p.Runner.MemberID()
	}
	forwarded := map[string]int{}
	for _, id := range ids {
		esc := url.PathEscape(id)
		for _, path := range []string{"/v1/sessions/" + esc, "/v1/sessions/" + esc + "/events"} {
			var first []byte
			for _, m := range ms {
				for _, tc := range []struct{ token, query string }{{"tok-a", ""}, {"tok-admin", "?scope=project:a"}, {"tok-admin", ""}} {
					code, body, by := fetch(t, m.srv.URL, tc.token, path+tc.query)
					if code != 200 {
						t.Fatalf("%s GET %s%s (%s): %d %s", m.name, path, tc.query, tc.token, code, body)
					}
					if first == nil {
						first = body
					} else if string(body) != string(first) {
						t.Fatalf("%s GET %s%s: body differs from the first instance's:\n%s\n%s", m.name, path, tc.query, body, first)
					}
					if by != "" && by != selfID[m.name] {
						forwarded[m.name]++
					}
				}
				// another scope's token: 404 as locally, with and without ?scope=
				for _, q := range []string{"", "?scope=project:a"} {
					if code, body, _ := fetch(t, m.srv.URL, "tok-b", path+q); code != 404 {
						t.Fatalf("%s GET %s%s as project:b: %d %s, want 404", m.name, path, q, code, body)
					}
				}
			}
		}
	}
	for _, m := range ms {
		if forwarded[m.name] == 0 {
			t.Errorf("%s forwarded no read: every session cannot be on it", m.name)
		}
	}

	// tree searches (chronicle.searches): reads from everywhere, and a
	// write (resume) sent to an instance that does not own the search
	// reaches its owner
	var resumed bool
	for _, id := range searches {
		var first []byte
		var owner string
		for _, m := range ms {
			code, body, by := fetch(t, m.srv.URL, "tok-a", "/v1/searches/"+id)
			if code != 200 || (first != nil && string(body) != string(first)) {
				t.Fatalf("%s GET search %s: %d %s (first %s)", m.name, id, code, body, first)
			}
			first, owner = body, by
			if code, _, _ := fetch(t, m.srv.URL, "tok-b", "/v1/searches/"+id+"?scope=project:a"); code != 404 {
				t.Fatalf("%s GET search %s as project:b: %d", m.name, id, code)
			}
		}
		if resumed || owner == selfID["m1"] {
			continue
		}
		code, res := call(t, m1.srv.URL, "tok-a", "POST", "/v1/searches/"+id+"/resume", map[string]any{"decision": "approve", "note": "forwarded"})
		if code != http.StatusAccepted || res["search_id"] != id {
			t.Fatalf("POST resume of %s (owned by %s) on m1: %d %v", id, owner, code, res)
		}
		if code, res := call(t, m1.srv.URL, "tok-b", "POST", "/v1/searches/"+id+"/resume?scope=project:a", map[string]any{"decision": "approve"}); code != 404 {
			t.Fatalf("POST resume as project:b: %d %v", code, res)
		}
		resumed = true
	}
	if !resumed {
		t.Fatal("every search is on m1: no forwarded resume tested")
	}

	// workflow writes sent to one instance wait for the owner's apply and
	// answer its state; the workflow then reads the same everywhere
	for i := 0; i < 4; i++ {
		wf := fmt.Sprintf("wf-%d", i)
		code, res := call(t, m1.srv.URL, "tok-a", "POST", "/v1/workflows/"+wf+"/updates", map[string]any{"layer": 1, "channel": "messages", "update": "hello " + wf})
		if code != http.StatusOK {
			t.Fatalf("POST %s/updates on m1: %d %v", wf, code, res)
		}
		var first []byte
		for _, m := range ms {
			code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/workflows/"+wf)
			if code != 200 || !strings.Contains(string(body), "hello "+wf) || (first != nil && string(body) != string(first)) {
				t.Fatalf("%s GET %s: %d %s (first %s)", m.name, wf, code, body, first)
			}
			first = body
		}
	}

	// forks of wf-0 into new workflows, whose partitions fall on several
	// members: each answers 200 with the fork's state, read from its owner
	code, res := call(t, m1.srv.URL, "tok-a", "POST", "/v1/workflows/wf-0/checkpoints", map[string]any{"layer": 1})
	cpID, _ := res["checkpoint_id"].(string)
	if code != http.StatusOK || cpID == "" {
		t.Fatalf("checkpoint wf-0: %d %v", code, res)
	}
	for i := 0; i < 6; i++ {
		child := fmt.Sprintf("fork-%d", i)
		fork := map[string]any{"workflow_id": child, "checkpoint_id": cpID, "event_id": "fork-event-" + child}
		code, res := call(t, m2.srv.URL, "tok-a", "POST", "/v1/workflows/wf-0/fork", fork)
		if code != http.StatusOK || !strings.Contains(fmt.Sprint(res["state"]), "hello wf-0") {
			t.Fatalf("fork wf-0 → %s: %d %v", child, code, res)
		}
		// its retry, from every member (with three, one may own neither
		// the parent nor the new workflow): the first answer again
		for _, m := range ms {
			if code, again := call(t, m.srv.URL, "tok-a", "POST", "/v1/workflows/wf-0/fork", fork); code != http.StatusOK || again["position"] != res["position"] {
				t.Fatalf("retry of the fork into %s from %s: %d %v, want 200 at %v", child, m.name, code, again, res["position"])
			}
		}
		if code, res := call(t, m3.srv.URL, "tok-a", "POST", "/v1/workflows/wf-0/fork", map[string]any{"workflow_id": child, "checkpoint_id": cpID}); code != http.StatusConflict {
			t.Fatalf("second fork into %s: %d %v, want 409", child, code, res)
		}
	}

	// lists: every instance pages through the same sessions in id order
	want := append([]string(nil), ids...)
	sort.Strings(want)
	var pagesOf []string
	for _, m := range ms {
		var got, cursors []string
		cursor := ""
		for page := 0; page < 10; page++ {
			code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions?limit=5&cursor="+url.QueryEscape(cursor))
			if code != 200 {
				t.Fatalf("%s list: %d %s", m.name, code, body)
			}
			var l struct {
				Sessions []struct {
					ID string `json:"id"`
				} `json:"sessions"`
				NextCursor string `json:"next_cursor"`
			}
			_ = json.Unmarshal(body, &l)
			if len(l.Sessions) > 5 {
				t.Fatalf("%s: page of %d > limit 5", m.name, len(l.Sessions))
			}
			for _, s := range l.Sessions {
				got = append(got, s.ID)
			}
			cursors = append(cursors, l.NextCursor)
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s listed %v, want %v", m.name, got, want)
		}
		pagesOf = append(pagesOf, fmt.Sprint(cursors))
		if code, body, _ := fetch(t, m.srv.URL, "tok-b", "/v1/sessions"); code != 200 || strings.Contains(string(body), "s3cret") {
			t.Fatalf("%s list as project:b: %d %s", m.name, code, body)
		}
	}
	if pagesOf[0] != pagesOf[1] || pagesOf[1] != pagesOf[2] {
		t.Fatalf("cursors differ between instances: %v", pagesOf)
	}

	// the memory bank's single partition: one owner, readable everywhere
	var memBody []byte
	for _, m := range ms {
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/memories/"+url.PathEscape(memID))
			if code == 200 {
				if memBody != nil && string(body) != string(memBody) {
					t.Fatalf("%s memory %s differs: %s vs %s", m.name, memID, body, memBody)
				}
				memBody = body
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s GET memory %s: %d %s", m.name, memID, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if code, _, _ := fetch(t, m.srv.URL, "tok-b", "/v1/memories/"+url.PathEscape(memID)); code != 404 {
			t.Fatalf("%s memory as project:b: %d", m.name, code)
		}
	}

	// memory search: only the owner of chronicle.memories/0 indexes the
	// bank, every instance answers from it
	for _, m := range ms {
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/memories/search?query="+url.QueryEscape("check the partition owner first"))
			if code == 200 && strings.Contains(string(body), memID) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s memory search: %d %s, want a hit %s", m.name, code, body, memID)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if code, body, _ := fetch(t, m.srv.URL, "tok-b", "/v1/memories/search?query="+url.QueryEscape("check the partition owner first")); code != 200 || strings.Contains(string(body), memID) {
			t.Fatalf("%s memory search as project:b: %d %s", m.name, code, body)
		}
	}

	// the loop guard: a forwarded request is answered locally, so a
	// session of another member's partition is a 404 here
	var elsewhere string
	for _, id := range ids {
		if _, _, by := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)); by != selfID["m1"] && by != "" {
			elsewhere = id
			break
		}
	}
	if code, _, _ := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(elsewhere), httpapi.ForwardedHeader, "test"); code != 404 {
		t.Fatalf("a forwarded request for %s was not answered locally: %d", elsewhere, code)
	}

	// m3 stops answering (its pipeline stays in the group)
	var onM3 string
	for _, id := range ids {
		if _, _, by := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)); by == selfID["m3"] {
			onM3 = id
		}
	}
	if onM3 == "" {
		t.Fatal("no session on m3's partitions")
	}
	m3.swap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	for _, path := range []string{"/v1/sessions/" + url.PathEscape(onM3), "/v1/sessions?limit=5"} {
		start := time.Now()
		code, body, _ := fetch(t, m1.srv.URL, "tok-a", path)
		took := time.Since(start)
		var fe httpapi.ForwardError
		_ = json.Unmarshal(body, &fe)
		if code != http.StatusGatewayTimeout || fe.Member != selfID["m3"] || fe.URL != m3.api.Advertise || !strings.Contains(fe.Error, selfID["m3"]) {
			t.Fatalf("GET %s with m3 silent: %d %s, want 504 naming %s", path, code, body, selfID["m3"])
		}
		if took > fwd+2*time.Second {
			t.Fatalf("GET %s with m3 silent took %v, bound %v", path, took, fwd)
		}
	}
	m3.srv.Close()
	code, body, _ := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(onM3))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), selfID["m3"]) {
		t.Fatalf("GET with m3's server gone: %d %s, want 503 naming it", code, body)
	}
	// a client is told when to retry: a member that is gone leaves the
	// group (or times out) and the rebalance moves its partitions (an
	// operator's walkthrough found 37 of 50 such answers without it)
	for _, path := range []string{"/v1/sessions/" + url.PathEscape(onM3), "/v1/sessions?limit=5"} {
		req, _ := http.NewRequest(http.MethodGet, m1.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("GET %s with m3's server gone: %d, Retry-After %q; want 503 with Retry-After", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}

// BenchmarkForwardedRead: two instances on the embedded broker (4
// partitions, 12 sessions). Per iteration, in turn: the owner's local read
// of a session (GET on the instance that owns its partition), the same
// read sent to the other instance (forwarded to the owner: single-scope
// token), and the same read with a token of every scope and no ?scope=
// (a fan-out to both members). Reports each one's p50 and p99 in µs and
// the forwarded / local and fan-out / local ratios of the p50s (and the
// forwarded / local ratio of the p99s).
//
//	go test -run '^$' -bench ForwardedRead -benchtime=2000x -count=3 ./cmd/chronicle/httpapi/
func BenchmarkForwardedRead(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m1 := startMember(ctx, b, "m1", nil, 0)
	m2 := startMember(ctx, b, "m2", m1.p.Broker.Addrs(), 0)
	recs, err := sampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for i := 0; i < 12; i++ {
		envs, err := taubench.Events(recs[i])
		if err != nil {
			b.Fatal(err)
		}
		id := envs[0].SessionID
		for j := range envs {
			envs[j].Scope = "project:a"
		}
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitCluster(b, []*member{m1, m2})
	var onM2 string
	for _, id := range ids {
		if _, _, by := fetch(b, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)); by == m2.p.Runner.MemberID() {
			onM2 = id
			break
		}
	}
	if onM2 == "" {
		b.Fatal("no session on m2's partitions")
	}
	path := "/v1/sessions/" + url.PathEscape(onM2)
	kinds := []struct {
		name, base, token string
	}{{"local", m2.srv.URL, "tok-a"}, {"forwarded", m1.srv.URL, "tok-a"}, {"fanout", m1.srv.URL, "tok-admin"}}
	lat := make([][]time.Duration, len(kinds))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, kd := range kinds {
			start := time.Now()
			code, body, _ := fetch(b, kd.base, kd.token, path)
			lat[k] = append(lat[k], time.Since(start))
			if code != 200 {
				b.Fatalf("%s: %d %s", kd.name, code, body)
			}
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, f float64) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[int(f*float64(len(s)-1))].Microseconds())
	}
	for k, kd := range kinds {
		b.ReportMetric(q(lat[k], 0.5), kd.name+"_p50_us")
		b.ReportMetric(q(lat[k], 0.99), kd.name+"_p99_us")
	}
	b.ReportMetric(q(lat[1], 0.5)/q(lat[0], 0.5), "forwarded/local_p50")
	b.ReportMetric(q(lat[2], 0.5)/q(lat[0], 0.5), "fanout/local_p50")
	b.ReportMetric(q(lat[1], 0.99)/q(lat[0], 0.99), "forwarded/local_p99")
}

// TestMixedGroupAgreesOnSticky: an instance with the advertising balancer
// and one of an older Chronicle (plain cooperative-sticky, as before this
// change) form one group: the coordinator picks the protocol both know,
// the partitions are split between them, the members show no URL, and
// the new instance answers reads from its own store instead of
// forwarding (a rolling upgrade keeps working).
func TestMixedGroupAgreesOnSticky(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "new", nil, time.Second)
	old, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: m1.p.Broker.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, _ := fetch(t, m1.srv.URL, "tok-admin", "/v1/cluster")
		var v httpapi.ClusterView
		_ = json.Unmarshal(body, &v)
		var parts []int32
		urls := ""
		for _, m := range v.Members {
			parts = append(parts, m.Assigned[string(events.TopicSessions)]...)
			urls += m.URL
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		if code == 200 && len(v.Members) == 2 && fmt.Sprint(parts) == "[0 1 2 3]" {
			if urls != "" {
				t.Fatalf("members show URLs %q under plain cooperative-sticky", urls)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mixed group did not settle: %d %s", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// every session read answers at once from the local store (no
	// forward, no wait): 200 or 404; so do the list and a read without
	// ?scope= by a token of every scope (no fan-out to a member without a
	// URL)
	for _, path := range []string{"/v1/sessions", "/v1/sessions/some-session"} {
		if code, body, _ := fetch(t, m1.srv.URL, "tok-admin", path); code != 200 && code != 404 {
			t.Fatalf("GET %s in a mixed group: %d %s", path, code, body)
		}
	}
	for i := 0; i < 8; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, body, by := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id))
		if (code != 200 && code != 404) || time.Since(start) > 2*time.Second || (by != "" && by != m1.p.Runner.MemberID()) {
			t.Fatalf("read of %s in a mixed group: %d %s (served by %q)", id, code, body, by)
		}
	}
}

// TestAccessConformanceCluster runs the access-control conformance suite
// against a two-instance cluster, sent to the instance that does not own
// the own scope's session (so its session routes are forwarded and the
// owner authorises them; the other entities are forwarded or local as
// their partitions fall). The /mcp tools are not forwarded (README) and
// keep their single-instance suite.
//
// Twice: the first member on its embedded broker, the second joining it;
// and both on a separate broker (`chronicle broker`), where every relay
// is fenced and the derived topics are written in transactions.
func TestAccessConformanceCluster(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { accessConformanceCluster(t, false) })
	t.Run("external-broker", func(t *testing.T) { accessConformanceCluster(t, true) })
}

func accessConformanceCluster(t *testing.T, external bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var m1, m2 *member
	if external {
		b, err := broker.Start(ctx, broker.Config{Partitions: 4, DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		m1 = startMember(ctx, t, "m1", b.Addrs(), 0)
		m2 = startMember(ctx, t, "m2", b.Addrs(), 0)
	} else {
		m1 = startMember(ctx, t, "m1", nil, 0)
		m2 = startMember(ctx, t, "m2", m1.p.Broker.Addrs(), 0)
	}
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	// an instance on its own embedded broker arms its fence once another
	// joined it (its relay was unfenced until then); no member warns
	deadline := time.Now().Add(10 * time.Second)
	for !m1.p.RelayFenced() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range ms {
		if !m.p.RelayFenced() {
			t.Errorf("%s: relay not fenced in a two-instance cluster", m.name)
		}
		var h struct {
			Warnings []string `json:"warnings"`
		}
		code, body, _ := fetch(t, m.srv.URL, "tok-admin", "/healthz")
		if err := json.Unmarshal(body, &h); err != nil || code != 200 || len(h.Warnings) > 0 {
			t.Errorf("%s /healthz: %d %s (no warning wanted)", m.name, code, body)
		}
	}
	base := m1.srv.URL
	secret := "SECRET-A-7f3c"
	envs, sid := sessionIn(t, 3, "project:a", secret)
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("seeding project:a: %d %v", code, m)
	}
	bEnvs, _ := sessionIn(t, 5, "project:b", "B-ONLY")
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", bEnvs); code != 202 {
		t.Fatalf("seeding project:b: %d %v", code, m)
	}
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Check fare rules " + secret, "description": "Before changing flights, check the fare class.", "content": "Look up the reservation, then the fare rules. " + secret, "outcome": "success"})
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	wfc := client.New(base, "tok-a")
	if _, err := wfc.Update(ctx, "wf-a", 0, events.ChannelContext, map[string]any{"note": secret}); err != nil {
		t.Fatal(err)
	}
	cp, err := wfc.Checkpoint(ctx, "wf-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wfc.Interrupt(ctx, "wf-a", events.DecisionHuman, "approve "+secret+"?", "approve", "reject")
	if err != nil {
		t.Fatal(err)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "search-1", secret)); code != 202 {
		t.Fatalf("seeding the search: %d %v", code, m)
	}
	pass, err := events.New(events.ReasoningPassCompleted, "accesstest/reasoning", "pass-a-1", time.Unix(1700000000, 0).UTC(), events.ReasoningPassData{
		TaskID: "rt/1", Task: "Answer " + secret, PassNumber: 1, Phase: "C", TTLRemaining: 2, Output: secret,
		Plan:        &events.Plan{Steps: []events.PlanStep{{StepID: "s1", Description: "look up " + secret}}},
		Convergence: events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 1, Consistency: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	pass.Scope = "project:a"
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []events.Envelope{pass}); code != 202 {
		t.Fatalf("seeding project:a's reasoning task: %d %v", code, m)
	}
	waitCluster(t, ms)
	// send the suite to the instance that does not own the session
	_, _, by := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(sid))
	if by == m1.p.Runner.MemberID() {
		base = m2.srv.URL
	}
	memID := rec["id"].(string)
	f := accesstest.Fixture{Reasoning: "rt/1", Search: "search-1", Pattern: patternOf(t, m1.p, "project:a"),
		Workflow: "wf-a", WorkflowCheckpoint: cp.CheckpointID, WorkflowDecision: dec.EventID,
		BaseURL: base, OwnToken: "tok-a", OtherToken: "tok-b", AdminToken: "tok-admin", WriteOnlyToken: "tok-wo",
		OwnScope: "project:a", OtherScope: "project:b", Session: sid, Memory: memID, Secrets: []string{secret},
		Response: openAPIResponses(t), // forwarded answers too
		State: func(t *testing.T) string {
			waitCluster(t, ms)
			var b strings.Builder
			for _, path := range []string{"/v1/sessions/" + url.PathEscape(sid), "/v1/sessions/" + url.PathEscape(sid) + "/events", "/v1/memories/" + memID, "/v1/memories/" + memID + "/history", "/v1/workflows/wf-a", "/v1/workflows/wf-a/checkpoints", "/v1/searches/search-1", "/v1/searches/search-1/nodes", "/v1/reasoning/rt%2F1", "/v1/reasoning/rt%2F1/history"} {
				code, m := call(t, base, "tok-a", "GET", path, nil)
				fmt.Fprintf(&b, "%s %d %v\n", path, code, m)
			}
			return b.String()
		},
	}
	var registered []string
	for _, r := range m1.api.Routes() {
		registered = append(registered, r.Pattern)
	}
	accesstest.Run(t, f, registered, accesstest.Cases())
}
