package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// TestReadOnlyResumeInACluster: a token that reads a workflow's scope but
// may not write it gets 403 naming the scope from a resume or a decision
// answer without ?scope=, from either member, as one instance answers
// (entityKey); before, the cluster's scope probe (writeToHeldScope, rule
// scopeWritable) dropped read-only scopes and answered 404 "not found"
// (a review of the day's changes).
func TestReadOnlyResumeInACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	waitCluster(t, []*member{m1, m2})
	wf := workflowIDsOn(t, m2, m1, "project:b", "wfro", 1)[0]
	base := "/v1/workflows/" + wf
	for _, s := range []struct{ path, body string }{
		{base + "/updates?scope=project:b", `{"channel":"messages","update":"first"}`},
		{base + "/checkpoints?scope=project:b", `{"layer":0}`},
		{base + "/decisions?scope=project:b", `{"decision_id":"d1","kind":"human","question":"go?","layer":1}`},
	} {
		if code, b := postJSON(t, m2.srv.URL, "tok-ab", s.path, s.body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", s.path, code, b)
		}
	}
	for _, m := range []*member{m1, m2} {
		for _, s := range []struct{ path, body string }{
			{base + "/resume", `{}`},
			{base + "/decisions/d1", `{"answer":"yes","by":"ro"}`},
			{base + "/resume?scope=project:b", `{}`},
		} {
			code, b := postJSON(t, m.srv.URL, "tok-ab-ro", s.path, s.body)
			var out map[string]any
			_ = json.Unmarshal(b, &out)
			if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "project:b") {
				t.Errorf("%s POST %s as tok-ab-ro (reads project:b, writes project:a): %d %s; want 403 naming project:b as one instance answers", m.name, s.path, code, b)
			}
		}
	}
}

// TestReadOnlyResumeAlone: the same on one instance, 403.
func TestReadOnlyResumeAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	waitCluster(t, []*member{m1})
	base := "/v1/workflows/wfro"
	for _, s := range []struct{ path, body string }{
		{base + "/updates?scope=project:b", `{"channel":"messages","update":"first"}`},
		{base + "/checkpoints?scope=project:b", `{"layer":0}`},
		{base + "/decisions?scope=project:b", `{"decision_id":"d1","kind":"human","question":"go?","layer":1}`},
	} {
		if code, b := postJSON(t, m1.srv.URL, "tok-ab", s.path, s.body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", s.path, code, b)
		}
	}
	for _, s := range []struct{ path, body string }{{base + "/resume", `{}`}, {base + "/decisions/d1", `{"answer":"yes","by":"ro"}`}} {
		code, b := postJSON(t, m1.srv.URL, "tok-ab-ro", s.path, s.body)
		if code != http.StatusForbidden {
			t.Errorf("alone POST %s: %d %s, want 403", s.path, code, b)
		}
	}
}

// TestClientFanOutHeaderIsNotAMembers: a client's Chronicle-Fan-Out on a
// read that one member forwards to the owner is dropped, so the owner
// answers it as a forwarded read, not as a member's fan-out: no
// member-only Chronicle-Held-Scope reaches the client (a review found it
// there).
func TestClientFanOutHeaderIsNotAMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	waitCluster(t, []*member{m1, m2})
	wf := workflowIDsOn(t, m1, m2, "project:a", "wffan", 1)[0]
	if code, b := postJSON(t, m1.srv.URL, "tok-a", "/v1/workflows/"+wf+"/updates", `{"channel":"messages","update":"first"}`); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, b)
	}
	req, _ := http.NewRequest(http.MethodGet, m2.srv.URL+"/v1/workflows/"+wf, nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	req.Header.Set(httpapi.FanOutHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(httpapi.ServedByHeader) == "" {
		t.Fatalf("read through m2: %d served by %q", resp.StatusCode, resp.Header.Get(httpapi.ServedByHeader))
	}
	if h := resp.Header.Get("Chronicle-Held-Scope"); h != "" {
		t.Errorf("a client's read answered with the member-only Chronicle-Held-Scope: %s", h)
	}
}

// TestWriteOnlyResumeInACluster: a token that writes a workflow's scope
// but may not read it (tok-ab-wo writes project:a and project:b, reads
// nothing) gets the read's 404 from a resume or a decision answer without
// ?scope=, from either member, as one instance answers (readsAndWrites);
// before, the cluster's scope probe (writeToHeldScope, rule scopeWritable)
// kept the scopes the token writes, and the resume answered 200 with the
// workflow's whole state (tenant-isolation review, defect A). Its appends
// still work, answered without the state.
func TestWriteOnlyResumeInACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	waitCluster(t, []*member{m1, m2})
	wf := workflowIDsOn(t, m2, m1, "project:b", "wfwo", 1)[0]
	base := "/v1/workflows/" + wf
	for _, s := range []struct{ path, body string }{
		{base + "/updates?scope=project:b", `{"channel":"context","update":{"note":"WO-CLUSTER-SECRET"}}`},
		{base + "/checkpoints?scope=project:b", `{"layer":0}`},
		{base + "/decisions?scope=project:b", `{"decision_id":"d1","kind":"human","question":"go?","layer":1}`},
	} {
		if code, b := postJSON(t, m2.srv.URL, "tok-b", s.path, s.body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", s.path, code, b)
		}
	}
	for _, m := range []*member{m1, m2} {
		for _, s := range []struct{ path, body string }{
			{base + "/resume", `{}`},
			{base + "/decisions/d1", `{"answer":"yes","by":"wo"}`},
			{base + "/resume?scope=project:b", `{}`},
		} {
			code, b := postJSON(t, m.srv.URL, "tok-ab-wo", s.path, s.body)
			if code != http.StatusNotFound || strings.Contains(string(b), "SECRET") {
				t.Errorf("%s POST %s as tok-ab-wo (writes project:a and project:b, reads nothing): %d %s; want 404", m.name, s.path, code, b)
			}
		}
		code, b := postJSON(t, m.srv.URL, "tok-ab-wo", base+"/updates?scope=project:b", `{"channel":"context","update":{"from":"wo"}}`)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		if code != http.StatusOK || out["state"] != nil || strings.Contains(string(b), "SECRET") {
			t.Errorf("%s: an update as tok-ab-wo: %d %s; want 200 without the state", m.name, code, b)
		}
	}
}
