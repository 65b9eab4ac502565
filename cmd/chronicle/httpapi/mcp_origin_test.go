package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// On a server with tokens, a cross-origin POST to /mcp is a 403 before
// its token is looked at, with or without one, as the README says: the
// answer must not tell a page of another site whether it sent no token
// (401), an unknown one (401 invalid_token) or a valid one (403). Before,
// authentication ran first (an MCP walkthrough, 2026-12-03).
func TestMCPOriginIsCheckedBeforeTheToken(t *testing.T) {
	_, _, base := scopedServer(t)
	for _, token := range []string{"", "tok-unknown", "tok-a"} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", "http://evil.example")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("token %q, Origin evil.example: %d (WWW-Authenticate %q), want 403 before authentication", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// /.well-known/ serves nothing: a 404 without a token on a server with
// tokens, so an MCP client's OAuth discovery learns there is no
// authorization server (it was a 401 without resource_metadata, which
// clients read as "authorization required, find out where": an MCP
// walkthrough). Every /v1 route still needs a token.
func TestWellKnownIsNotFoundWithoutAToken(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}}}}
	srv := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens}).Handler()) // not conforming: these paths are no routes
	defer srv.Close()
	base := srv.URL
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp"} {
		code, _ := call(t, base, "", "GET", path, nil)
		if code != http.StatusNotFound {
			t.Errorf("GET %s without a token: %d, want 404", path, code)
		}
	}
	// a member header there gets the same 404, not the account of how
	// members sign (a security review: the path skipped the token check
	// and reached the member check)
	req, _ := http.NewRequest("GET", base+"/.well-known/x", nil)
	req.Header.Set("Chronicle-Forwarded-By", "m1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "member_secret") {
		t.Errorf("a member header under /.well-known/: %d %s, want the 404", resp.StatusCode, b)
	}
	if code, _ := call(t, base, "", "GET", "/v1/sessions", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/sessions without a token: %d, want 401", code)
	}
}
