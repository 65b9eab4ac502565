package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// Chronicle-Scope-Probe is an internal marker of writeToHeldScope's
// fan-out. A client's read without ?scope= that carried it (a multi-scope
// token, a workflow held on the other member) reached the other member as
// a probe, which answered {"id","scopes"}, and fanOutEntity relayed that
// list as the workflow (found by a review). toOwner drops the header from
// a request no member forwarded.
func TestClientScopeProbeHeaderDoesNotChangeAFannedOutRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	waitCluster(t, []*member{m1, m2})
	wf := workflowIDsOn(t, m2, m1, "project:b", "wfp", 1)[0]
	if code, b := postJSON(t, m2.srv.URL, "tok-ab", "/v1/workflows/"+wf+"/updates?scope=project:b", `{"channel":"messages","update":"first"}`); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, b)
	}
	// an outside caller sending the internal headers itself learns only its own scopes
	code, body, _ := fetch(t, m2.srv.URL, "tok-a", "/v1/workflows/"+wf, httpapi.ForwardedHeader, "x", httpapi.FanOutHeader, "1", httpapi.ScopeProbeHeader, "1")
	if strings.Contains(string(body), "project:b") {
		t.Errorf("a project:a token's own probe: %d %s names project:b", code, body)
	}
	t.Logf("a project:a token's own probe to m2: %d %s", code, body)
	// the plain read, through m1: the workflow
	code, body, _ = fetch(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf)
	if code != http.StatusOK || !strings.Contains(string(body), `"messages"`) {
		t.Fatalf("GET through m1: %d %s", code, body)
	}
	// the same read with the probe header set by the client
	code, body, _ = fetch(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf, httpapi.ScopeProbeHeader, "1")
	if code != http.StatusOK || !strings.Contains(string(body), `"messages"`) {
		t.Errorf("GET through m1 with a client's %s header: %d %s; want the workflow, as without it", httpapi.ScopeProbeHeader, code, body)
	}
}
