package httpapi_test

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// A session's log read forwarded to its owner is given the owner's own
// bound (httpapi.SessionEventsTimeout) beyond the forward timeout: the
// owner reads the log, which may take it longer than a projection read.
// Before, the forward was cut at the forward timeout (5 s) with a 504
// while the owner took up to 30 s (found by an operator's walkthrough).
// The members here forward with a 1 ns timeout: a session read forwarded
// misses it (the control), its log read does not.
func TestForwardedSessionLogGetsItsBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const fwd = time.Nanosecond
	m1 := startMember(ctx, t, "m1", nil, fwd)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), fwd)
	ms := []*member{m1, m2}
	var ids []string
	for i := 0; i < 8; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitCluster(t, ms)
	selfID := map[string]string{m1.name: m1.p.Runner.MemberID(), m2.name: m2.p.Runner.MemberID()}
	checked := 0
	for _, id := range ids {
		esc := url.PathEscape(id)
		for _, m := range ms {
			code, body, by := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+esc+"/events")
			if code != 200 {
				t.Fatalf("%s GET %s/events: %d %s, want 200 (forwarded, the owner's 30 s on top of the 1 ns forward timeout)", m.name, id, code, body)
			}
			if by == "" || by == selfID[m.name] {
				continue // its own session
			}
			if code, _, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+esc); code != 504 {
				t.Fatalf("%s GET %s forwarded: %d, want 504 (the control: the 1 ns forward timeout bites a plain read)", m.name, id, code)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no log read was forwarded: every session on the member asked")
	}
}
