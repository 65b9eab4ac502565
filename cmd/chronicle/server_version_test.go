package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestMCPServerVersionIsAVersion: the MCP servers name their version to
// clients (initialize's serverInfo.version) as a version — the -ldflags
// version, else the module's, the VCS revision when the build has one,
// and the Go version — without the advice --version gives an operator
// for a build without a VCS revision. Before, `chronicle mcp` and /mcp
// sent the advice too, a 190-character sentence an agent runtime showed
// and logged as the server's version (an MCP walkthrough, 2026-12-06).
// The test binary's own check fails on the code before when it is built
// without a VCS revision (GOFLAGS=-buildvcs=false, or no git checkout).
func TestMCPServerVersionIsAVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	if got := serverVersionOf("", bi, true); got != "(devel) go1.26.8" {
		t.Errorf("serverVersionOf a build without VCS: %q, want \"(devel) go1.26.8\"", got)
	}
	if got := versionOf("", bi, true); !strings.Contains(got, noVCSAdvice) {
		t.Errorf("versionOf a build without VCS lost its advice: %q", got)
	}
	bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "bc4bd2ecd7be0123"}, {Key: "vcs.modified", Value: "true"}}
	if got := serverVersionOf("", bi, true); got != "(devel) (bc4bd2ecd7be+dirty) go1.26.8" {
		t.Errorf("serverVersionOf a build with VCS: %q", got)
	}
	if got := serverVersionOf("v1.2.3", bi, true); got != "v1.2.3 (bc4bd2ecd7be+dirty) go1.26.8" {
		t.Errorf("serverVersionOf v1.2.3: %q", got)
	}

	// chronicle mcp's initialize, against a service that only says who
	// the caller is
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/whoami" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"local","read":["*"],"write":["*"],"default_write_scope":"org:default"}`)
	}))
	defer api.Close()
	cs := startMCP(t, api.URL, "")
	v := cs.InitializeResult().ServerInfo.Version
	if strings.Contains(v, "no VCS revision") || !regexp.MustCompile(`^\S+( \([0-9a-f]{12}(\+dirty)?(, \S+)?\))? go1\.\S+$`).MatchString(v) {
		t.Errorf("chronicle mcp's serverInfo.version %q, want <version> [(<revision>[, <time>])] go1.x", v)
	}
}
