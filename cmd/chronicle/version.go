package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is the release version, set at link time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/chronicle
//
// Empty: versionString falls back to the module version and VCS stamp of
// the build (runtime/debug.ReadBuildInfo).
var version string

// versionString is what `chronicle --version` prints after "chronicle version ":
// the -ldflags version, else the main module's version ("(devel)" for a
// build from a checkout), followed by the VCS revision (12 hex digits,
// "+dirty" for a modified tree), its commit time and the Go version when
// the build info holds them.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(version, bi, ok)
}

// versionOf is versionString for the -ldflags version v and the build
// info bi (ok false: none). A build without -ldflags version and without
// a VCS revision (go build -buildvcs=false, or GOFLAGS holding it, or a
// tree that is no git checkout) says so and how to get one: it printed
// "(devel) go1.x" alone, which the README's promise of a revision did not
// prepare for (an operator's walkthrough, 2026-12-06).
func versionOf(v string, bi *debug.BuildInfo, ok bool) string {
	ldflags := v
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return v
	}
	if v == "" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev != "":
		v += fmt.Sprintf(" (%s%s", rev, dirty)
		if at != "" {
			v += ", " + at
		}
		v += ")"
	case ldflags == "" && v == "(devel)":
		v += noVCSAdvice
	}
	return v + " " + bi.GoVersion
}

// noVCSAdvice is what versionOf adds for a build without a VCS revision:
// how to get one, for an operator reading --version.
const noVCSAdvice = " (no VCS revision in this build: make build stamps git describe's, and go build stamps the commit in a git checkout unless -buildvcs=false, which GOFLAGS may hold)"

// serverVersion is versionString as the MCP servers (/mcp and chronicle
// mcp) name their version to clients in initialize's serverInfo, and
// with every result under protocol 2026-07-28: a version, without the
// advice for operators. The advice, added for --version, went there too,
// so agent runtimes showed and logged a 190-character sentence as the
// server's version (an MCP walkthrough, 2026-12-06).
func serverVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return serverVersionOf(version, bi, ok)
}

// serverVersionOf is serverVersion for the -ldflags version v and the
// build info bi (ok false: none).
func serverVersionOf(v string, bi *debug.BuildInfo, ok bool) string {
	return strings.Replace(versionOf(v, bi, ok), noVCSAdvice, "", 1)
}
