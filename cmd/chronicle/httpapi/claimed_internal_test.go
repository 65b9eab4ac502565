package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// A member asked in a fan-out for an id its store does not hold answers
// 503 with Retry-After, not 404, while the group's view names it the
// owner of a partition its engine does not hold (assigned and taken away
// before it restored it: its store may lack the rows); with the view and
// the engine agreeing, the 404 stands. Before, the 404 was relayed to the
// client for sessions acknowledged minutes before (an operator's
// walkthrough, 2026-11-30, after broker restarts). The engine here holds
// two partitions of chronicle.sessions; a third, in the view only, stands
// for the one taken away.
func TestNotFoundWhileClaimingAnUnheldPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Runner.Ownership().Partitions) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	s := &Server{P: p}
	self := p.Runner.MemberID()
	topic := string(events.TopicSessions)
	view := func(parts int) {
		v := &groupView{self: self, members: []string{self}, owner: map[tp]string{}, parts: map[string]int{topic: parts}, topics: map[string]bool{topic: true}, state: "Stable"}
		for i := range parts {
			v.owner[tp{topic, int32(i)}] = self
		}
		s.dir.mu.Lock()
		s.dir.view, s.dir.err, s.dir.at = v, nil, time.Now()
		s.dir.mu.Unlock()
	}
	rt := ownerRoute{kind: "session", topic: fixedTopic(events.TopicSessions), split: func(r *http.Request) (string, string, error) {
		return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/sessions/"), "events")
	}, scopes: func(*projections.Store, string) ([]string, error) { return nil, nil }}
	h := s.ownedOnly(rt, func(w http.ResponseWriter, _ *http.Request) { writeErr(w, 404, "not found") })
	ask := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/sessions/c-286", nil)
		req.Header.Set(FanOutHeader, "1")
		w := httptest.NewRecorder()
		h(w, req)
		return w
	}
	view(2)
	if w := ask(); w.Code != http.StatusNotFound {
		t.Fatalf("view and engine agree: %d %s, want 404", w.Code, w.Body)
	}
	view(3)
	if w := ask(); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "/2, which its engine does not hold") {
		t.Fatalf("claiming an unheld partition: %d %s, want 503 with Retry-After naming it", w.Code, w.Body)
	}
}
