package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// A memory.feedback.v1 resent to POST /v1/events with its first send's
// time, after the clock window, is a plain duplicate when the memory bank
// applied the first send (TestEventsFeedbackResentAfterTheWindow). On a
// cluster the check read the answering member's store, so a member that
// does not own chronicle.memories answered the resend 403 while the owner
// answered 202: the answer depended on which member the load balancer
// picked. That member now sends the request on to the owner: the resend is
// a 202 duplicate on both members and counted once, and a late feedback
// never accepted is the owner's 403 on both.
func TestLateFeedbackResendOnEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	var owner, other *member
	for _, m := range ms {
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicMemories) {
				owner = m
			}
		}
	}
	for _, m := range ms {
		if m != owner {
			other = m
		}
	}
	if owner == nil || other == nil {
		t.Fatalf("memory bank owner %v: the test needs one member without it", owner)
	}
	post := func(m *member, v any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(v)
		code, body := postJSON(t, m.srv.URL, "tok-a", "/v1/events", string(b))
		var out map[string]any
		_ = json.Unmarshal(body, &out)
		return code, out
	}
	if code, m := post(other, map[string]any{"specversion": "1.0", "id": "r-1", "source": "test/late", "type": string(events.MemoryRecorded),
		"scope": "project:a", "data": map[string]any{"memory_id": "m1", "title": "t", "description": "d", "content": "c", "outcome": "success", "source": "explicit"}}); code != 202 {
		t.Fatalf("recording m1: %d %v", code, m)
	}
	fb := func(id string, at time.Time) map[string]any {
		m := map[string]any{"specversion": "1.0", "id": id, "source": "test/late", "type": string(events.MemoryFeedback), "scope": "project:a",
			"data": map[string]any{"memory_id": "m1", "signal": "explicit_feedback", "positive": false}}
		if !at.IsZero() {
			m["time"] = at.UTC().Format(time.RFC3339Nano)
		}
		return m
	}
	// the first send, without time: accepted and applied by the owner
	if code, m := post(other, fb("f-1", time.Time{})); code != 202 {
		t.Fatalf("the first send: %d %v", code, m)
	}
	key := events.EntityKey("project:a", "m1")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, signals, err := memories.History(owner.p.Store, key)
		if err == nil && len(signals) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's memory bank never applied f-1: %v %v", owner.name, signals, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if applied, _, _ := other.p.Store.AppliedContent(memories.Name, &events.Envelope{Source: "test/late", ID: "f-1", Scope: "project:a"}); applied {
		t.Fatalf("%s, which does not own chronicle.memories, holds f-1: the test needs a member without it", other.name)
	}

	// the resend dated an hour back (out of the window; the time is no
	// part of the event's identity): a duplicate wherever it is sent
	late := time.Now().Add(-time.Hour)
	for _, m := range []*member{other, owner} {
		if code, out := post(m, fb("f-1", late)); code != 202 || fmt.Sprint(out["ids"]) != "[f-1]" {
			t.Fatalf("the late resend of an applied feedback to %s (memory bank on %s): %d %v; want 202 {ids: [f-1]}, a duplicate, as the owner answers",
				m.name, owner.name, code, out)
		}
	}
	// never accepted: the owner's 403, sent without time it is accepted
	for _, m := range []*member{other, owner} {
		code, out := post(m, fb("f-2", late))
		if msg, _ := out["error"].(string); code != 403 || out["pointer"] != "/time" || !strings.Contains(msg, "without time") || strings.Contains(msg, "could not ask") {
			t.Fatalf("a late feedback never accepted, to %s: %d %v; want the owner's 403 naming /time", m.name, code, out)
		}
	}
	if code, out := post(other, fb("f-2", time.Time{})); code != 202 {
		t.Fatalf("f-2 without time: %d %v", code, out)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, signals, err := memories.History(owner.p.Store, key)
		if err == nil && len(signals) == 2 {
			if signals[0].EventID != "f-1" || signals[1].EventID != "f-2" {
				t.Fatalf("m1's signals: %+v; want f-1 once, then f-2", signals)
			}
			break
		}
		if err != nil || len(signals) > 2 || time.Now().After(deadline) {
			t.Fatalf("m1's signals: %+v %v; want f-1 once, then f-2", signals, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
