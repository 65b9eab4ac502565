package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// workflow with a service that answers 401 says where the token comes
// from: the variable --token-env names, empty or holding an unknown token
// (it printed "HTTP 401: access: missing or unknown bearer token" alone:
// a new user's walkthrough, 2026-11-30).
func TestWorkflowSaysWhereTheTokenComesFrom(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"access: missing or unknown bearer token"}`))
	}))
	defer srv.Close()
	for env, want := range map[string]string{"": "$CHRONICLE_TOKEN is empty", "nope": "the token in $CHRONICLE_TOKEN is not one of the service's"} {
		cmd := exec.Command(binary, "workflow", "list", "--api", srv.URL)
		cmd.Env = append(os.Environ(), "CHRONICLE_TOKEN="+env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("CHRONICLE_TOKEN=%q: %v\n%s\nwant %q", env, err, out, want)
		}
	}
}
