package main

import (
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion checks --version prints the build's own version (module
// version and Go version) without -ldflags, and the -ldflags version (the
// variable -X main.version sets) when there is one.
func TestVersion(t *testing.T) {
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^chronicle version \S.* go1\.\d+`).Match(out) {
		t.Errorf("chronicle --version: %q, want \"chronicle version <version> ... go1.x\"", out)
	}
	defer func(v string) { version = v }(version)
	version = "v9.8.7" // what -ldflags "-X main.version=v9.8.7" sets
	if got := versionString(); !strings.HasPrefix(got, "v9.8.7 ") {
		t.Errorf("versionString with version v9.8.7: %q", got)
	}
	// a build without a VCS revision says so (it printed "(devel) go1.x":
	// an operator's walkthrough, 2026-12-06); one with it names it
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	if got := versionOf("", bi, true); !strings.Contains(got, "(devel) (no VCS revision in this build: make build stamps") {
		t.Errorf("versionOf a build without VCS: %q", got)
	}
	bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "bc4bd2ecd7be0123"}, {Key: "vcs.time", Value: "2026-12-06T05:39:48Z"}}
	if got := versionOf("", bi, true); got != "(devel) (bc4bd2ecd7be, 2026-12-06T05:39:48Z) go1.26.8" {
		t.Errorf("versionOf a build with VCS: %q", got)
	}
}

// TestKafkaListenOnlyWhereUsed checks --kafka-listen is offered by the
// commands that start the embedded broker on it, and by no other.
func TestKafkaListenOnlyWhereUsed(t *testing.T) {
	kafkaListenFlagLine := regexp.MustCompile(`(?m)^\s+--kafka-listen\b`)
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"serve"}, true}, {[]string{"demo"}, true}, {[]string{"broker"}, true}, {[]string{"search", "game24"}, true}, {[]string{"solver", "lock"}, true},
		{[]string{"replay"}, false}, {[]string{"audit"}, false}, {[]string{"digest"}, false}, {[]string{"inspect"}, false}, {[]string{"mcp"}, false},
	} {
		out, err := exec.Command(binary, append(c.args, "--help")...).Output()
		if err != nil {
			t.Fatalf("%v --help: %v", c.args, err)
		}
		// the flag's own line among the flags (an example may name another
		// command's --kafka-listen: inspect's names chronicle broker's)
		if got := kafkaListenFlagLine.Match(out); got != c.want {
			t.Errorf("chronicle %s --help shows --kafka-listen: %v, want %v", strings.Join(c.args, " "), got, c.want)
		}
	}
}

// TestBrokerHasNoBrokersFlag: `chronicle broker` is the broker; a
// --brokers naming another one was shown and silently ignored. It is now
// an unknown flag.
func TestBrokerHasNoBrokersFlag(t *testing.T) {
	out, err := exec.Command(binary, "broker", "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "--brokers") {
		t.Errorf("chronicle broker --help shows --brokers:\n%s", out)
	}
	out, err = exec.Command(binary, "broker", "--brokers", "127.0.0.1:1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unknown flag: --brokers") {
		t.Errorf("chronicle broker --brokers: %v %s, want an unknown-flag error", err, out)
	}
}
