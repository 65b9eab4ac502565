package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// chronicle mcp against a service that answers 401 says what is wrong
// with the token at start, with --scope or without. Before, a missing
// token read "start chronicle serve first, or pass --scope", and with
// --scope mcp started and every tool call answered 401 (a subscriber
// walkthrough).
func TestMCPSaysWhatIsWrongWithTheToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"unknown bearer token"}`)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct{ token, want string }{
		{"", "needs an API token and $CHRONICLE_TOKEN is empty or unset"},
		{"tok-x", "refused the token in $CHRONICLE_TOKEN (401: unknown bearer token)"},
	} {
		backend := &httpapi.Client{Base: srv.URL, Token: c.token}
		if _, _, err := defaultScope(ctx, backend, "CHRONICLE_TOKEN"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("without --scope, token %q: %v, want %q", c.token, err, c.want)
		}
		if _, err := checkScope(ctx, backend, "project:a", "CHRONICLE_TOKEN", io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("with --scope, token %q: %v, want a refusal at start saying %q", c.token, err, c.want)
		}
	}
}
