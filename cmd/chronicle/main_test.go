package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/zonetest"
)

// binary is the chronicle command built once for the tests that run it as
// a child process (crash and broker-restart tests). It is built without the
// race detector so the child runs at production speed.
var binary string

func TestMain(m *testing.M) {
	if zonetest.Child() { // a test re-run under another zone builds nothing
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "chronicle-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "chronicle")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build chronicle:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if cleanDir != "" {
		os.RemoveAll(cleanDir)
	}
	os.Exit(code)
}

var (
	cleanOnce    sync.Once
	cleanDir     string
	cleanSummary Summary
	cleanErr     string
)

// cleanDemo is `chronicle demo --json` with its defaults (one partition) to
// completion on a fresh directory, run once per test binary: the clean run
// the crash test and the demo --serve test compare with. It returns the
// summary and the directory, which the tests must not write to.
func cleanDemo(t *testing.T) (Summary, string) {
	t.Helper()
	cleanOnce.Do(func() {
		d, err := os.MkdirTemp("", "chronicle-clean-demo-")
		if err != nil {
			cleanErr = err.Error()
			return
		}
		cleanDir = d
		cmd := exec.Command(binary, "demo", "--data", d, "--kafka-listen", "127.0.0.1:0", "--json")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			cleanErr = fmt.Sprintf("demo: %v\n%s", err, errb.String())
			return
		}
		if err := json.Unmarshal(out.Bytes(), &cleanSummary); err != nil {
			cleanErr = fmt.Sprintf("demo output %q: %v", out.String(), err)
		}
	})
	if cleanErr != "" {
		t.Fatal(cleanErr)
	}
	return cleanSummary, cleanDir
}

// runDemo runs `chronicle demo --json` to completion on data and returns
// its summary.
func runDemo(t *testing.T, data string, extra ...string) Summary {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"demo", "--data", data, "--kafka-listen", "127.0.0.1:0", "--json"}, extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\n%s", err, errb.String())
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("demo output %q: %v", out.String(), err)
	}
	return s
}

// Every command runs with DefaultGCPercent unless GOGC says otherwise
// (the test binary runs the package's init as the command does).
func TestDefaultGCPercent(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the environment decides")
	}
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Fatalf("GC percent %d, want %d", got, DefaultGCPercent)
	}
}
