package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestForkRetryInACluster: two members on the embedded broker (4
// partitions). A fork retried with its event_id (the same write) is
// answered as the first write was — 200, the same body, the first write's
// position — whichever member it is sent to, whether the new workflow's
// partition is the parent's owner's or the other member's; the same
// event_id with another fork is a 409 naming /event_id, and another fork
// into the taken id (a new event_id) a 409. Found by the last session:
// the retry of a fork whose new workflow another member owns answered 409
// "already exists" (the parent's owner, which runs the fork, looked for
// the event's idempotency key in its own store; the child's owner holds
// it).
func TestForkRetryInACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, 0)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), 0)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	// post sends body to m's path as tok-a, with hdr's name/value pairs
	post := func(m *member, path, body string, hdr ...string) (int, []byte) {
		t.Helper()
		return postJSON(t, m.srv.URL, "tok-a", path, body, hdr...)
	}
	if code, body := post(m1, "/v1/workflows/parent/updates", `{"channel":"messages","update":"from the parent"}`); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, body)
	}
	code, body := post(m1, "/v1/workflows/parent/checkpoints", `{"layer":1}`)
	var cp struct {
		CheckpointID string `json:"checkpoint_id"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &cp) != nil || cp.CheckpointID == "" {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	// the member that read it (a forwarded answer names it; m1's own, not)
	ownerOf := func(id string) string {
		t.Helper()
		code, body, by := fetch(t, m1.srv.URL, "tok-a", "/v1/workflows/"+id)
		if code != http.StatusOK {
			t.Fatalf("GET /v1/workflows/%s: %d %s", id, code, body)
		}
		if by == "" {
			by = m1.p.Runner.MemberID()
		}
		return by
	}
	parentOwner := ownerOf("parent")

	// fork into new ids until one lands on each member: the parent's owner
	// and the other one
	tested := map[bool]bool{}
	for i := 0; i < 32 && len(tested) < 2; i++ {
		child := fmt.Sprintf("child-%d", i)
		fork := fmt.Sprintf(`{"event_id":"fork-%d","checkpoint_id":%q,"workflow_id":%q}`, i, cp.CheckpointID, child)
		code, first := post(m1, "/v1/workflows/parent/fork", fork)
		if code != http.StatusOK {
			t.Fatalf("fork parent → %s: %d %s", child, code, first)
		}
		var res struct {
			Position string `json:"position"`
		}
		_ = json.Unmarshal(first, &res)
		childOwner := ownerOf(child)
		elsewhere := childOwner != parentOwner
		if tested[elsewhere] {
			continue
		}
		tested[elsewhere] = true
		where := fmt.Sprintf("%s (parent's owner %s, new workflow's owner %s)", child, parentOwner, childOwner)
		for _, m := range ms {
			code, again := post(m, "/v1/workflows/parent/fork", fork)
			if code != http.StatusOK || !bytes.Equal(again, first) {
				t.Errorf("retry of the fork into %s sent to %s: %d %s\nwant 200 with the first answer (position %s): %s", where, m.name, code, again, res.Position, first)
			}
		}
		other := fmt.Sprintf(`{"event_id":"fork-%d","checkpoint_id":%q,"workflow_id":%q,"updates":{"messages":"another fork"}}`, i, cp.CheckpointID, child)
		for _, m := range ms {
			code, body := post(m, "/v1/workflows/parent/fork", other)
			var e struct {
				Pointer string `json:"pointer"`
			}
			_ = json.Unmarshal(body, &e)
			if code != http.StatusConflict || e.Pointer != "/event_id" {
				t.Errorf("another fork into %s under a used event_id, sent to %s: %d %s; want 409 naming /event_id", where, m.name, code, body)
			}
			// a new event_id into the taken id: the new workflow exists
			code, body = post(m, "/v1/workflows/parent/fork", fmt.Sprintf(`{"checkpoint_id":%q,"workflow_id":%q}`, cp.CheckpointID, child))
			if code != http.StatusConflict {
				t.Errorf("a new fork into %s, sent to %s: %d %s; want 409", where, m.name, code, body)
			}
		}
		_, after, _ := fetch(t, m2.srv.URL, "tok-a", "/v1/workflows/"+child)
		var st struct {
			Events   int               `json:"events"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(after, &st); err != nil || st.Events != 1 || len(st.Messages) != 1 {
			t.Errorf("%s after the retries: %s; want the one fork applied (1 event, the parent's message)", where, after)
		}
	}
	if len(tested) < 2 {
		t.Fatalf("32 new workflows did not fall on both members: %v", tested)
	}
	// a fork from a checkpoint that is no checkpoint id (400) or names
	// none (404) is refused as a single member refuses it, whichever member
	// owns the new workflow (six new ids: both members' partitions but
	// with a chance of 2^-5) and whichever the request reaches: the
	// parent's owner's refusal passes back through the extra hop
	for i := 0; i < 6; i++ {
		for _, c := range []struct {
			cid  string
			want int
		}{{"nope", http.StatusBadRequest}, {"chronicle.workflows:0:999999", http.StatusNotFound}} {
			for _, m := range ms {
				fork := fmt.Sprintf(`{"checkpoint_id":%q,"workflow_id":"bad-%d"}`, c.cid, i)
				code, body := post(m, "/v1/workflows/parent/fork", fork)
				if code != c.want || !bytes.Contains(body, []byte("checkpoint")) {
					t.Errorf("fork of parent from checkpoint %q into bad-%d, sent to %s: %d %s; want %d naming the checkpoint", c.cid, i, m.name, code, body, c.want)
				}
			}
		}
	}
	// a fork carrying Chronicle-Fork-Hop that reaches a member which does
	// not own the new workflow's partition (a client set the header, or
	// the partition moved) is refused with 503 and written nowhere; the
	// owner writes it as before. It used to be written by whichever member
	// it reached, where the new workflow's idempotency key is not
	refused, written := 0, 0
	for i := 0; i < 32 && (refused == 0 || written == 0); i++ {
		child := fmt.Sprintf("hop-%d", i)
		code, body := post(m1, "/v1/workflows/parent/fork", fmt.Sprintf(`{"event_id":"hop-%d","checkpoint_id":%q,"workflow_id":%q}`, i, cp.CheckpointID, child), "Chronicle-Fork-Hop", "1")
		switch code {
		case http.StatusOK: // m1 owns the new workflow: a local fork
			if by := ownerOf(child); by != m1.p.Runner.MemberID() {
				t.Errorf("a fork with the hop header was written by m1 into %s, whose owner is %s", child, by)
			}
			written++
		case http.StatusServiceUnavailable:
			if !bytes.Contains(body, []byte("does not own partition")) {
				t.Errorf("hop-header fork into %s on a member that does not own it: 503 %s; want the owner named", child, body)
			}
			if code, body, _ := fetch(t, m1.srv.URL, "tok-a", "/v1/workflows/"+child); code != http.StatusNotFound {
				t.Errorf("after a refused hop-header fork, GET %s: %d %s; want 404", child, code, body)
			}
			refused++
		default:
			t.Fatalf("hop-header fork into %s sent to m1: %d %s; want 200 (m1 owns it) or 503", child, code, body)
		}
	}
	if refused == 0 || written == 0 {
		t.Fatalf("32 hop-header forks: %d refused, %d written; want both kinds", refused, written)
	}
}
