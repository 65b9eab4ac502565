package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the chronicle command built once for the tests that run it as
// a child process (crash and broker-restart tests). It is built without the
// race detector so the child runs at production speed.
var binary string

func TestMain(m *testing.M) {
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
	os.Exit(code)
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
