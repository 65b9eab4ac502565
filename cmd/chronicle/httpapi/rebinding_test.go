package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi/accesstest"
)

// TestNoTokensServesLoopbackNamesOnly: a server without tokens (loopback
// only, every scope) answers 403 naming the Host to a request that reached
// its loopback listener under a Host that is not a loopback name, on every
// operation of /openapi.json but the public paths, and documents it. A
// page of another site that had its name resolved to 127.0.0.1 (DNS
// rebinding) is same-origin with its own name, so no CORS preflight stops
// it: before, it read and wrote every scope (GET /v1/whoami answered
// {"read":["*"],"write":["*"]} to Host: evil.example); the MCP SDK refused
// it on /mcp only. Found by a standards-conformance walkthrough (the MCP
// transport's DNS-rebinding rule).
func TestNoTokensServesLoopbackNamesOnly(t *testing.T) {
	check := openAPIResponses(t)
	srv := httptest.NewServer(routesOnly().Handler())
	t.Cleanup(srv.Close)
	doc := loadOpenAPI(t)
	do := func(method, uri, host string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, srv.URL+uri, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, body := do(http.MethodGet, "/v1/whoami", "evil.example:80"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /v1/whoami with Host evil.example:80: %d %s, want 403", resp.StatusCode, body)
	}
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		if path == "/healthz" || path == "/metrics" || path == "/openapi.json" {
			continue
		}
		uri := pathParam.ReplaceAllString(path, "x")
		for method := range doc.Paths.Value(path).Operations() {
			resp, body := do(method, uri, "evil.example")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "evil.example") {
				t.Errorf("%s %s with Host evil.example: %d %.200s, want 403 naming the Host", method, uri, resp.StatusCode, body)
				continue
			}
			check(t, accesstest.Request{Method: method, Path: uri}, "test", resp, body)
			n++
		}
	}
	if n < 30 {
		t.Fatalf("checked %d operations, want every one (≥ 30)", n)
	}
	for _, host := range []string{"localhost", "LOCALHOST:1", "127.0.0.1", "127.0.0.2:80", "[::1]:8080"} {
		if resp, body := do(http.MethodGet, "/v1/whoami", host); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/whoami with Host %s: %d %s, want 200", host, resp.StatusCode, body)
		}
	}
	if resp, _ := do(http.MethodGet, "/openapi.json", "evil.example"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /openapi.json with Host evil.example: %d, a public path answers any Host", resp.StatusCode)
	}
}
