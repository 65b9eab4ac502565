package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// Once the brokers have been away longer than a session timeout, a member
// of a cluster answers from its own store; what the store lacks may be
// another member's, so its "not found" is a 503, not a false 404 (an SRE's
// walkthrough, 2026-11-30). A member alone, and what the store holds, are
// answered as before.
func TestLocalAnswerOfAClusterMemberInAnOutage(t *testing.T) {
	s := &Server{P: &pipeline.Pipeline{}}
	if s.dir.wasCluster() {
		t.Fatal("a member never seen in a group counts as a cluster's")
	}
	s.dir.stable = &groupView{members: []string{"a"}}
	if s.dir.wasCluster() {
		t.Fatal("a group of one counts as a cluster")
	}
	s.dir.stable = &groupView{members: []string{"a", "b"}}
	if !s.dir.wasCluster() {
		t.Fatal("a group of two does not count as a cluster")
	}
	rt := ownerRoute{kind: "session"}
	answer := func(code int, h http.Header) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.localOrUnknown(rt, "s1", func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range h {
				w.Header()[k] = v
			}
			writeErr(w, code, "answer %d", code)
		})(w, httptest.NewRequest("GET", "/v1/sessions/s1", nil))
		return w
	}
	if w := answer(404, nil); w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `session \"s1\" is not in this member's store`) {
		t.Errorf("a local 404: %d %s, want 503 with Retry-After naming the session", w.Code, w.Body)
	}
	if w := answer(200, nil); w.Code != 200 || !strings.Contains(w.Body.String(), "answer 200") {
		t.Errorf("a local 200: %d %s, want it as answered", w.Code, w.Body)
	}
	if w := answer(404, http.Header{NoRouteHeader: {"1"}}); w.Code != 404 {
		t.Errorf("a 404 of no route: %d, want it as answered", w.Code)
	}
}

// Only the brokers' silence makes a local "not found" unknown: an answer
// with an error (authorization, no such group) keeps the 404 (a review,
// 2026-11-30: any describe failure once the Stable view was old turned
// every real 404 into a 503 that blamed the brokers).
func TestBrokersAway(t *testing.T) {
	for err, away := range map[error]bool{
		fmt.Errorf("describe group g: %w within 2s", errNoAnswer):                               true,
		fmt.Errorf("describe group g: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}): true,
		fmt.Errorf("describe group g: %w", context.DeadlineExceeded):                            true,
		errNoGroup: false,
		errors.New("describe group g: GROUP_AUTHORIZATION_FAILED: Not authorized to access group"): false,
	} {
		if got := brokersAway(err); got != away {
			t.Errorf("brokersAway(%v) = %v, want %v", err, got, away)
		}
	}
}

// A member asked in a fan-out while it has no view of the group (the
// brokers away) names the scopes it reads the id in, as a member with a
// view does: the asker then sees one scope in several members' 200s, not
// one "scope held by member …" per member, which made a 409 "exists in
// several scopes" for an id in one scope (an operator's walkthrough,
// 2026-11-30).
func TestOwnedOnlyWithoutAViewNamesItsScopes(t *testing.T) {
	s := &Server{P: &pipeline.Pipeline{}}
	s.dir.view, s.dir.err, s.dir.at = nil, fmt.Errorf("describe group g: %w within 2s", errNoAnswer), time.Now()
	rt := ownerRoute{kind: "session", topic: fixedTopic(events.TopicSessions), split: func(r *http.Request) (string, string, error) {
		return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/sessions/"), "events")
	}, scopes: func(*projections.Store, string) ([]string, error) {
		return []string{"org:default", "project:other"}, nil
	}}
	h := s.ownedOnly(rt, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"id": "c-69"}) })
	req := httptest.NewRequest("GET", "/v1/sessions/c-69", nil)
	req.Header.Set(FanOutHeader, "1")
	req = req.WithContext(context.WithValue(req.Context(), callerKey{}, access.Caller{Name: "t", Read: []string{"org:default"}}))
	w := httptest.NewRecorder()
	h(w, req)
	if w.Code != 200 || w.Header().Get(heldScopeHeader) != "org:default" {
		t.Fatalf("%d, held scope %q; want 200 naming org:default (the scope the caller reads)", w.Code, w.Header().Get(heldScopeHeader))
	}
}

// A member that restarted and never saw the group Stable before the
// brokers went (the group waits a session timeout for its old
// incarnation) still counts as a cluster's once a description showed
// another member: it answered from its own store, false 404s and a
// partial list with 200 for the whole outage (an operator's walkthrough,
// 2026-12-06). A description that shows this member alone ends it.
func TestRejoinedMemberCountsAsACluster(t *testing.T) {
	s := &Server{P: &pipeline.Pipeline{}}
	view := func(state string, members ...string) *groupView {
		return &groupView{self: "c", state: state, members: members, urls: map[string]string{}, owner: map[tp]string{}, parts: map[string]int{}, topics: map[string]bool{}}
	}
	s.dir.record(view("PreparingRebalance", "a", "b", "c"), nil, "c", time.Minute)
	if !s.dir.wasCluster() {
		t.Fatal("a member that saw others in a rebalancing group does not count as a cluster's")
	}
	s.dir.record(nil, fmt.Errorf("describe group g: %w within 2s", errNoAnswer), "c", time.Minute)
	if !s.dir.wasCluster() {
		t.Fatal("the brokers' silence made it forget the others")
	}
	s.dir.record(view(groupStable, "c"), nil, "c", time.Minute)
	if s.dir.wasCluster() {
		t.Fatal("a member alone in a Stable group counts as a cluster's")
	}
}

// A probe (keepGroupViewFresh before any Stable view: a member that served
// /healthz only) notes the other members without caching a rebalancing
// view for the reads; one a read joined, or that found the group Stable,
// is recorded (an operator's re-test, 2026-12-06: a restarted member that
// served only /healthz had described nothing when the brokers went).
func TestProbeNotesOthersWithoutCaching(t *testing.T) {
	view := func(state string, members ...string) *groupView {
		return &groupView{self: "c", state: state, members: members, urls: map[string]string{}, owner: map[tp]string{}, parts: map[string]int{}, topics: map[string]bool{}}
	}
	var d directory
	d.finish(&describeCall{probe: true}, view("PreparingRebalance", "a", "b", "c"), nil, "c", time.Minute)
	if !d.wasCluster() || !d.at.IsZero() || d.view != nil || d.stable != nil {
		t.Fatalf("after a probe of a rebalancing group: cluster %v, cached at %v, view %v; want a cluster and nothing cached", d.wasCluster(), d.at, d.view)
	}
	d.finish(&describeCall{probe: true}, nil, fmt.Errorf("describe group g: %w within 2s", errNoAnswer), "c", time.Minute)
	if !d.wasCluster() || !d.at.IsZero() {
		t.Fatal("a probe the brokers did not answer changed the directory")
	}
	d.finish(&describeCall{probe: true}, view(groupStable, "a", "c"), nil, "c", time.Minute)
	if d.stable == nil || d.at.IsZero() {
		t.Fatal("a probe that found the group Stable was not recorded")
	}
	var joinedByARead directory
	joinedByARead.finish(&describeCall{}, view("PreparingRebalance", "a", "c"), nil, "c", time.Minute)
	if joinedByARead.at.IsZero() || joinedByARead.view == nil || !joinedByARead.view.blind {
		t.Fatal("a description a read waits for was not recorded as before")
	}
}
