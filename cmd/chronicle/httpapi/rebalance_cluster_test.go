package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
)

// heldJoiner is a member of the processors' group driven by hand with the
// group protocol's requests (kmsg), to hold a rebalance open: it joins
// with the advertising balancer's metadata (so the group keeps its
// protocol), syncs once (an answer of REBALANCE_IN_PROGRESS leaves it
// holding with nothing), then heartbeats without ever joining again. The
// cooperative rebalance its join starts gives it nothing in its first
// round and takes a task from a member, which gives it up and joins
// again: the group is then PreparingRebalance, waiting for this member's
// join, until it leaves (or the rebalance timeout, 60 s, passes).
type heldJoiner struct {
	cl         *kgo.Client
	group      string
	memberID   string
	generation int32
	assigned   kmsg.ConsumerMemberAssignment

	mu          sync.Mutex
	rebalancing bool // a heartbeat answered REBALANCE_IN_PROGRESS
	stop        chan struct{}
	done        chan struct{}
}

func joinAndHold(ctx context.Context, t *testing.T, brokers []string, topics []string, url string) *heldJoiner {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	j := &heldJoiner{cl: cl, group: string(processors.ProcessorsGroup), stop: make(chan struct{}), done: make(chan struct{})}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = j.group
	join.SessionTimeoutMillis = 30_000
	join.RebalanceTimeoutMillis = 60_000
	join.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = httpapi.AdvertisingProtocol
	proto.Metadata = httpapi.AdvertisingBalancer(url, nil).JoinGroupMetadata(topics, nil, -1)
	join.Protocols = append(join.Protocols, proto)
	var jr *kmsg.JoinGroupResponse
	for attempt := 0; ; attempt++ {
		jr, err = join.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("join: %v", err)
		}
		if e := kerr.ErrorForCode(jr.ErrorCode); e == kerr.MemberIDRequired && attempt == 0 {
			join.MemberID = jr.MemberID
			continue
		} else if e != nil {
			t.Fatalf("join: %v", e)
		}
		break
	}
	j.memberID, j.generation = jr.MemberID, jr.Generation
	if jr.LeaderID == j.memberID {
		t.Fatalf("the held member %s leads the group: the members did not join again", j.memberID)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = j.group, j.generation, j.memberID
	sg.ProtocolType, sg.Protocol = kmsg.StringPtr("consumer"), jr.Protocol
	sr, err := sg.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(sr.ErrorCode)
	}
	// REBALANCE_IN_PROGRESS: the group went back to PreparingRebalance
	// between this join and its sync: either a member joined again
	// before the leader's sync (the round was abandoned; no partition
	// moved), or the round completed and the member that gave up a
	// partition joined again before this sync arrived (a loaded
	// machine). Either way the new round waits for this member's join,
	// which it never sends: it holds the rebalance from here with an
	// empty assignment, at the generation it joined (the coordinator
	// keeps it while preparing). Joining again, as an earlier version
	// did, let the second round complete and handed it the given-up
	// partition (CI failed there once: "assigned chronicle.deadletter
	// [2] in the first round").
	if errors.Is(err, kerr.RebalanceInProgress) {
		t.Logf("held member's sync: %v; it holds the next round with nothing", err)
		sr, err = nil, nil
	}
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if sr != nil && len(sr.MemberAssignment) > 0 {
		if err := j.assigned.ReadFrom(sr.MemberAssignment); err != nil {
			t.Fatalf("sync: assignment %v", err)
		}
	}
	go func() {
		defer close(j.done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-j.stop:
				return
			case <-tick.C:
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID = j.group, j.generation, j.memberID
			hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := hb.RequestWith(hctx, cl)
			cancel()
			if err == nil && kerr.ErrorForCode(resp.ErrorCode) == kerr.RebalanceInProgress {
				j.mu.Lock()
				j.rebalancing = true
				j.mu.Unlock()
			}
		}
	}()
	return j
}

func (j *heldJoiner) held() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rebalancing
}

// leave stops the heartbeats and leaves the group, which ends the
// rebalance.
func (j *heldJoiner) leave() {
	select {
	case <-j.stop:
		return
	default:
	}
	close(j.stop)
	<-j.done
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Group = j.group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = j.memberID
	l.Members = append(l.Members, m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.RequestWith(ctx, j.cl)
	j.cl.Close()
}

// getH sends a GET with token and returns status, body and headers.
func getH(t *testing.T, base, token, path string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// TestClusterReadsWhileRebalancing: two members (4 partitions, 12
// sessions of project:a), then a third member joins and holds the
// rebalance open (heldJoiner: the group stays PreparingRebalance, and the
// coordinator describes no member's URL or partitions meanwhile). For
// several directory refreshes (DirectoryTTL) during it, on both members:
// every session read (the one-scope token, routed to the owner; an admin
// token without ?scope=, a fan-out) answers 200 with the body read before
// the rebalance, or 503 with Retry-After — never 404 — and every page of
// a paging of GET /v1/sessions that answers 200 is the page the whole
// list gives (never a partial one). A server that starts on the second
// member's pipeline during the rebalance has seen no Stable view: its
// reads of sessions its engine does not hold and its list answer 503 with
// Retry-After and a body naming the rebalance, not 404 or a partial page.
// Routing by the description of the rebalancing group, as before, read
// every session locally: 404 for the other member's sessions, a list of
// one member's.
func TestClusterReadsWhileRebalancing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // generous: pipelines under -race on a loaded machine
	defer cancel()
	const fwd = 2 * time.Second
	m1 := startMember(ctx, t, "m1", nil, fwd)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), fwd)
	ms := []*member{m1, m2}
	var ids []string
	for i := 0; i < 12; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	waitCluster(t, ms)

	// the bodies before the rebalance, from each session's owner; each
	// member forwards some reads, so both have described the group Stable
	want := map[string]string{}
	for _, m := range ms {
		forwarded := 0
		self := m.p.Runner.MemberID()
		for _, id := range ids {
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, body, by := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id))
				if code == 200 {
					if w, ok := want[id]; ok && w != string(body) {
						t.Fatalf("%s: session %s reads differently from each member:\n%s\n%s", m.name, id, body, w)
					}
					want[id] = string(body)
					if by != self {
						forwarded++
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s GET session %s before the rebalance: %d %s", m.name, id, code, body)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if forwarded == 0 {
			t.Fatalf("%s forwarded no read: every session is on it", m.name)
		}
	}

	// a third member joins and holds the rebalance open; its URL answers
	// as an instance with an empty store (it owns nothing yet)
	joiner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/sessions" {
			_, _ = io.WriteString(w, `{"sessions":[],"next_cursor":""}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not found"}`)
	}))
	t.Cleanup(joiner.Close)
	j := joinAndHold(ctx, t, m1.p.Broker.Addrs(), m1.p.Runner.Topics(), joiner.URL)
	t.Cleanup(j.leave)
	for _, tpc := range j.assigned.Topics {
		if len(tpc.Partitions) > 0 {
			t.Fatalf("the joining member was assigned %s %v in the first round: the cooperative protocol gives a moved partition only once its owner gave it up", tpc.Topic, tpc.Partitions)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for !j.held() {
		if time.Now().After(deadline) {
			t.Fatal("the group did not start the second round of the rebalance (no member gave up a partition)")
		}
		time.Sleep(100 * time.Millisecond)
	}
	state := func() string {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		dg, err := m1.p.Admin().DescribeGroups(dctx, string(processors.ProcessorsGroup))
		if err != nil {
			t.Fatal(err)
		}
		return dg[string(processors.ProcessorsGroup)].State
	}
	if s := state(); s == "Stable" {
		t.Fatalf("group %s while a member is held out of its join", s)
	}

	// a server that starts now has seen no Stable view
	fresh := httptest.NewServer((&httpapi.Server{P: m2.p, Tokens: &clusterTokens, Advertise: m2.api.Advertise, ForwardTimeout: fwd}).Handler())
	t.Cleanup(fresh.Close)

	// the expected pages of the list (limit 5): key order, the cursor the
	// last key of a page
	const limit = 5
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = events.EntityKey("project:a", id)
	}
	sort.Strings(keys)
	page := func(after string) (want []string, next string) {
		i := 0
		for i < len(keys) && after != "" && keys[i] <= after {
			i++
		}
		end := min(i+limit, len(keys))
		if end < len(keys) {
			next = keys[end-1]
		}
		return keys[i:end], next
	}
	type listPage struct {
		Sessions []struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
		} `json:"sessions"`
		NextCursor string `json:"next_cursor"`
	}
	// checkRefusal fails the test unless code is a 503 with Retry-After
	checkRefusal := func(what string, code int, body []byte, h http.Header) {
		t.Helper()
		if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Fatalf("%s during the rebalance: %d (Retry-After %q) %s; want 200 with the body from before, or 503 with Retry-After", what, code, h.Get("Retry-After"), body)
		}
	}

	ok200 := map[string]int{}
	refused := map[string]int{}
	// a token of several scopes reads by fan-out; on the server that has
	// not seen the group Stable, it is answered for the sessions the
	// server's engine holds, as a token of one scope is (a review found
	// 503 for them all)
	fanOutRefused := 0
	defer func() {
		if fanOutRefused > 0 {
			t.Errorf("%d reads by a fan-out token answered non-200 on the new server for sessions its engine holds", fanOutRefused)
		}
	}()
	start := time.Now()
	for round := 0; round < 2 || time.Since(start) < 3*httpapi.DirectoryTTL; round++ {
		for _, m := range ms {
			for _, id := range ids {
				for _, tok := range []string{"tok-a", "tok-admin"} {
					what := fmt.Sprintf("%s GET session %s as %s", m.name, id, tok)
					code, body, h := getH(t, m.srv.URL, tok, "/v1/sessions/"+url.PathEscape(id))
					if code == 200 {
						if string(body) != want[id] {
							t.Fatalf("%s during the rebalance: 200 with\n%s\nwant\n%s", what, body, want[id])
						}
						ok200[m.name]++
						continue
					}
					checkRefusal(what, code, body, h)
					refused[m.name]++
				}
			}
			// a paging of the list: every 200 page is the whole list's
			cursor := ""
			for n := 0; n < 10; n++ {
				what := fmt.Sprintf("%s GET /v1/sessions page after %q", m.name, cursor)
				code, body, h := getH(t, m.srv.URL, "tok-a", "/v1/sessions?limit=5&cursor="+url.QueryEscape(cursor))
				if code != 200 {
					checkRefusal(what, code, body, h)
					refused[m.name]++
					break
				}
				var l listPage
				if err := json.Unmarshal(body, &l); err != nil {
					t.Fatalf("%s: %v %s", what, err, body)
				}
				var got []string
				for _, s := range l.Sessions {
					got = append(got, events.EntityKey(s.Scope, s.ID))
				}
				wantIDs, wantNext := page(cursor)
				if fmt.Sprint(got) != fmt.Sprint(wantIDs) || l.NextCursor != wantNext {
					t.Fatalf("%s during the rebalance: 200 with %v (next %q), want %v (next %q): a partial page", what, got, l.NextCursor, wantIDs, wantNext)
				}
				ok200[m.name]++
				if cursor = l.NextCursor; cursor == "" {
					break
				}
			}
		}
		// the server without a Stable view
		for _, id := range ids {
			what := fmt.Sprintf("new server GET session %s", id)
			code, body, h := getH(t, fresh.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id))
			if code == 200 {
				if string(body) != want[id] {
					t.Fatalf("%s during the rebalance: 200 with\n%s\nwant\n%s", what, body, want[id])
				}
				ok200["new"]++
				continue
			}
			checkRefusal(what, code, body, h)
			var e struct { // httpapi.RebalanceError
				Error      string `json:"error"`
				GroupState string `json:"group_state"`
			}
			if err := json.Unmarshal(body, &e); err != nil || !strings.Contains(e.Error, "rebalancing") || e.GroupState == "" || e.GroupState == "Stable" {
				t.Fatalf("%s: 503 %s: want a body naming the rebalance and the group's state", what, body)
			}
			refused["new"]++
		}
		// the admin token (reads "*": a fan-out) on the same sessions
		for _, id := range ids {
			code, _, _ := getH(t, fresh.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id))
			acode, abody, _ := getH(t, fresh.URL, "tok-admin", "/v1/sessions/"+url.PathEscape(id))
			if code == 200 && acode != 200 {
				fanOutRefused++
				if fanOutRefused == 1 {
					t.Logf("new server, session %s: tok-a 200 (its engine holds it), tok-admin %d %s", id, acode, abody)
				}
			}
		}
		code, body, h := getH(t, fresh.URL, "tok-a", "/v1/sessions?limit=5")
		checkRefusal("new server GET /v1/sessions", code, body, h)
		time.Sleep(100 * time.Millisecond)
	}
	if !j.held() || state() == "Stable" {
		t.Fatal("the rebalance ended during the reads: they did not test it")
	}
	t.Logf("during the rebalance (%v): 200s %v, 503s %v", time.Since(start).Round(time.Millisecond), ok200, refused)
	for _, m := range ms {
		if ok200[m.name] == 0 {
			t.Errorf("%s answered no read during the rebalance: its last Stable view routes them", m.name)
		}
	}
	if refused["new"] == 0 {
		t.Error("the new server answered every session from its store: none on the other member's partitions?")
	}
}
