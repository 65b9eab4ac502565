package main

import (
	"fmt"
	"runtime/debug"
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
	v := version
	bi, ok := debug.ReadBuildInfo()
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
	if rev != "" {
		v += fmt.Sprintf(" (%s%s", rev, dirty)
		if at != "" {
			v += ", " + at
		}
		v += ")"
	}
	return v + " " + bi.GoVersion
}
