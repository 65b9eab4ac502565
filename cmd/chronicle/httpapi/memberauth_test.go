package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// TestMemberSecretDropsClientsInternalHeaders: with a member_secret in
// the token file, members sign their requests to each other
// (Chronicle-Member-Auth). A client's Chronicle-Forwarded-By (with or
// without -Fan-Out and -Scope-Probe, or a made-up signature) is a 401,
// not a member's probe answer nor a read of the receiving member's store
// only (a 404 for another member's session); the other internal headers
// are dropped, the read answered as without them. Before, each member
// honoured them from anyone (found by a tenant-isolation review). The cluster's own
// forwards, fan-outs and scope probes, signed, work as before: reads
// through both members, with and without ?scope=, and a workflow write
// without ?scope= that finds its scope on the other member.
func TestMemberSecretDropsClientsInternalHeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tokens := clusterTokens
	tokens.MemberSecret = strings.Repeat("s3cret-", 6)
	m1 := startMemberTokens(ctx, t, "m1", nil, time.Second, 0, &tokens)
	m2 := startMemberTokens(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second, 0, &tokens)
	ms := []*member{m1, m2}
	var ids []string
	for i := 0; i < 6; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitCluster(t, ms)
	forged := [][]string{
		{httpapi.ForwardedHeader, "x", httpapi.FanOutHeader, "1", httpapi.ScopeProbeHeader, "1"},
		{httpapi.ForwardedHeader, "x"},
		{httpapi.ForwardedHeader, "x", httpapi.MemberAuthHeader, "1700000000.00"},
	}
	for _, id := range ids {
		path := "/v1/sessions/" + url.PathEscape(id)
		for _, m := range ms {
			for _, tc := range []struct{ token, query string }{{"tok-a", ""}, {"tok-admin", ""}, {"tok-admin", "?scope=project:a"}} {
				if code, body, _ := fetch(t, m.srv.URL, tc.token, path+tc.query); code != http.StatusOK {
					t.Fatalf("%s: GET %s%s as %s: %d %s", m.name, path, tc.query, tc.token, code, body)
				}
			}
			// claiming to be a member: refused
			for _, hdr := range forged {
				for _, tok := range []string{"tok-a", "tok-wo"} {
					if code, body, _ := fetch(t, m.srv.URL, tok, path, hdr...); code != http.StatusUnauthorized || strings.Contains(string(body), "project:a") {
						t.Errorf("%s: GET %s as %s with a client's %v: %d %s; want 401", m.name, path, tok, hdr, code, body)
					}
				}
			}
			// without a known bearer token: the bearer challenge first,
			// whatever the internal headers claim (RFC 6750)
			for _, auth := range []string{"", "Bearer tok-unknown"} {
				req, _ := http.NewRequest(http.MethodGet, m.srv.URL+path, nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				req.Header.Set(httpapi.ForwardedHeader, "x")
				req.Header.Set(httpapi.MemberAuthHeader, "1700000000.00")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || strings.Contains(string(body), "member_secret") {
					t.Errorf("%s: GET %s with Authorization %q and a client's member headers: %d %q %s; want 401 with the bearer challenge, member_secret unnamed", m.name, path, auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
				}
			}
			// the other internal headers: dropped, the read answered as without them
			hdr := []string{httpapi.FanOutHeader, "1", httpapi.ScopeProbeHeader, "1", "Chronicle-Chain-Hop", "1"}
			code, body, _ := fetch(t, m.srv.URL, "tok-a", path, hdr...)
			var v map[string]any
			_ = json.Unmarshal(body, &v)
			if code != http.StatusOK || v["scopes"] != nil || v["scope"] != "project:a" {
				t.Errorf("%s: GET %s as a with a client's %v: %d %s; want the session, as without them", m.name, path, hdr, code, body)
			}
			if code, body, _ := fetch(t, m.srv.URL, "tok-wo", path, hdr...); code != http.StatusNotFound || strings.Contains(string(body), "project:a") {
				t.Errorf("%s: GET %s as wo with a client's %v: %d %s; want 404", m.name, path, hdr, code, body)
			}
		}
	}
	// a workflow write without ?scope= by a token of two scopes, through
	// the member that does not hold it: the signed scope probe finds it
	wf := workflowIDsOn(t, m2, m1, "project:b", "wfs", 1)[0]
	if code, b := postJSON(t, m2.srv.URL, "tok-ab", "/v1/workflows/"+wf+"/updates?scope=project:b", `{"channel":"messages","update":"first"}`); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, b)
	}
	code, b := postJSON(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf+"/updates", `{"channel":"messages","update":"second"}`)
	var out struct{ State map[string]any }
	_ = json.Unmarshal(b, &out)
	if code != http.StatusOK || out.State["scope"] != "project:b" {
		t.Errorf("an update without ?scope= through m1: %d %s; want project:b's workflow", code, b)
	}
	if code, body, _ := fetch(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf); code != http.StatusOK || !strings.Contains(string(body), "second") {
		t.Errorf("GET the workflow through m1 (fan-out): %d %s", code, body)
	}
}

// TestMemberSecretTooShort: a token file's member_secret of fewer than 32
// characters is refused.
func TestMemberSecretTooShort(t *testing.T) {
	f := access.File{MemberSecret: "short"}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "member_secret") {
		t.Fatalf("Validate: %v; want an error naming member_secret", err)
	}
	f.MemberSecret = strings.Repeat("x", access.MinMemberSecret)
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}
