package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
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
