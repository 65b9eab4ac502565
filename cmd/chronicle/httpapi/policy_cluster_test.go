package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// Suggestion feedback and suggestions on a cluster: a policy's threshold
// and its verdict rows live in the store of the member that owns its
// partition, so every member sends these routes on to it. Before, a
// feedback sent to another member waited 5 s for an apply that happened
// on the owner and answered 503 (a client retrying there got 503 every
// time), and a suggestion there read the policy as it was never given
// feedback (found by a cluster walkthrough).
func TestPolicyAndWorkflowWritesOnEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, 0)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), 0)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	// a policy of project:a whose partition m2 owns, sent to m1
	policy := workflowIDsOn(t, m2, m1, "project:a", "pol", 1)[0]
	post := func(m *member, path, body string) (int, map[string]any, time.Duration) {
		t.Helper()
		t0 := time.Now()
		code, b := postJSON(t, m.srv.URL, "tok-admin", path, body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return code, out, time.Since(t0)
	}
	feedback := fmt.Sprintf(`{"policy":%q,"suggestion_id":"s1","accepted":true,"mode":"suggestion","confidence":0.7}`, policy)
	code, out, took := post(m1, "/v1/workflows/suggest/feedback?scope=project:a", feedback)
	if code != http.StatusOK || took > 4*time.Second {
		t.Fatalf("feedback sent to the member that does not own the policy: %d %v after %v, want 200 at once", code, out, took)
	}
	for _, m := range ms {
		if code, out, _ := post(m, "/v1/workflows/suggest/feedback?scope=project:a", feedback); code != http.StatusOK {
			t.Errorf("its resend to %s: %d %v, want 200 (counted once)", m.name, code, out)
		}
		code, out, _ := post(m, "/v1/workflows/suggest?scope=project:a", fmt.Sprintf(`{"intent":"book a flight","policy":%q}`, policy))
		pol, _ := out["policy"].(map[string]any)
		if code != http.StatusOK || pol["feedbacks"] != float64(1) {
			t.Errorf("a suggestion on %s: %d, policy %v; want the one feedback counted", m.name, code, pol)
		}
	}
	// a workflow write without ?scope= by a token of several scopes (the
	// admin's), sent to the member that does not own the workflow: sent on
	// to the owner. Before, complete answered 404 for a workflow the same
	// URL reads, and updates waited 5 s.
	wf := workflowIDsOn(t, m2, m1, events.DefaultScope, "adm", 1)[0]
	for _, c := range []struct{ path, body string }{
		{"/v1/workflows/" + wf + "/updates", `{"channel":"messages","update":"hi"}`},
		{"/v1/workflows/" + wf + "/checkpoints", `{"layer":0}`},
		{"/v1/workflows/" + wf + "/complete", `{"outcome":"success"}`},
	} {
		if code, out, took := post(m1, c.path, c.body); code != http.StatusOK || took > 4*time.Second {
			t.Fatalf("POST %s to the member that does not own it: %d %v after %v, want 200 at once", c.path, code, out, took)
		}
	}
	if code, body, _ := fetch(t, m1.srv.URL, "tok-admin", "/v1/workflows/"+wf); code != http.StatusOK || !bytes.Contains(body, []byte(`"completed"`)) {
		t.Fatalf("GET the workflow: %d %s, want it completed", code, body)
	}
}
