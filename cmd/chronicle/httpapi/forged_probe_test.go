package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// TestForgedScopeProbeNamesNoUnreadableScope: a client can send the
// cluster's internal headers itself (Chronicle-Forwarded-By,
// Chronicle-Fan-Out, Chronicle-Scope-Probe): no member can tell them from
// its own forward. A token that writes project:a and reads nothing sent
// them with GET /v1/sessions/{id} and the member owning the session's
// partition answered 200 {"id", "scopes":["project:a"]}: an existence
// oracle for ids the token may not read (found by a tenant-isolation
// review). A scope probe now names only scopes the caller reads; a
// token that reads project:a still gets its own scope named.
func TestForgedScopeProbeNamesNoUnreadableScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
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
	forged := []string{httpapi.ForwardedHeader, "x", httpapi.FanOutHeader, "1", httpapi.ScopeProbeHeader, "1"}
	named := 0
	for _, id := range ids {
		path := "/v1/sessions/" + url.PathEscape(id)
		for _, m := range ms {
			for _, tok := range []string{"tok-wo", "tok-b"} {
				code, body, _ := fetch(t, m.srv.URL, tok, path, forged...)
				if strings.Contains(string(body), "project:a") {
					t.Errorf("%s: GET %s as %s with forged internal headers: %d %s; names project:a, which the token does not read", m.name, path, tok, code, body)
				}
			}
			// the caller's own readable scope is still answered (the
			// probe writeToHeldScope sends works as before)
			code, body, _ := fetch(t, m.srv.URL, "tok-a", path, forged...)
			var ans struct{ Scopes []string }
			if code == http.StatusOK && json.Unmarshal(body, &ans) == nil && fmt.Sprint(ans.Scopes) == "[project:a]" {
				named++
			}
		}
	}
	if named != len(ids) {
		t.Errorf("a project:a token's probe named project:a for %d of %d sessions; want each, by its owner", named, len(ids))
	}
}
