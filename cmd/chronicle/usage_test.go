package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrorsExit64 runs the binary on command lines it refuses before
// starting anything and checks each exits with exitUsage (64) naming what
// is wrong, while failures of what a command talks to or reads still exit
// 1: before, both exited 1, so a script could not tell a typo from an
// outage.
func TestUsageErrorsExit64(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"bogus"}, exitUsage, `unknown command "bogus"`},
		{[]string{"serv"}, exitUsage, "Did you mean this?"},
		{[]string{"workflow", "bogus"}, exitUsage, `unknown command "bogus" for "chronicle workflow"`},
		{[]string{"help", "bogus"}, exitUsage, `"bogus" is not a command`},
		{[]string{"serve", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"serve", "--partitions", "x"}, exitUsage, `invalid argument "x" for "--partitions"`},
		{[]string{"serve", "--partitions", "0"}, exitUsage, "--partitions: 0, must be ≥ 1"},
		{[]string{"serve", "--http", "0.0.0.0:0", "--data", filepath.Join(dir, "d1")}, exitUsage, "--http: no --tokens configured"},
		{[]string{"digest", "./x"}, exitUsage, "takes no argument"},
		{[]string{"workflow", "state"}, exitUsage, "takes ID, got 0 argument(s)"},
		{[]string{"bench", "--only", ""}, exitUsage, "--only: empty"},
		{[]string{"search", "game24", "--beam", "0"}, exitUsage, "--beam: 0, must be ≥ 1"},
		{[]string{"replay", "--data", dir}, exitUsage, "--into: required"},
		{[]string{"replay", "--brokers", "127.0.0.1:1", "--into", filepath.Join(dir, "asof"), "--until", "bogus"}, exitUsage, `--until: "bogus" is neither`},
		{[]string{"token", "create", "--file", filepath.Join(dir, "t.json")}, exitUsage, "--name: required"},
		{[]string{"deadletter", "redrive", "--data", dir}, exitUsage, "--id or --all: give one"},
		{[]string{"deadletter", "redrive", "--id", "bogus", "--brokers", "127.0.0.1:1"}, exitUsage, `--id "bogus": not TOPIC:PARTITION:OFFSET`},
		// exited 1, or named tokens[0] (admin) (an operator's walkthrough, 2026-12-06)
		{[]string{"serve", "--request-log", "yaml", "--data", filepath.Join(dir, "d2")}, exitUsage, `--request-log: "yaml" is not text, json or off`},
		{[]string{"serve", "--session-timeout", "2s", "--data", filepath.Join(dir, "d3")}, exitUsage, "--session-timeout: 2s is below the embedded broker's minimum"},
		{[]string{"serve", "--workflow-state-max-mib", "-1", "--data", filepath.Join(dir, "d4")}, exitUsage, "--workflow-state-max-mib -1: negative"},
		{[]string{"token", "create", "--file", filepath.Join(dir, "t.json"), "--name", "admin", "--read", "project:"}, exitUsage, `--read: "project:" is not project:<id>, team:<id>, org:<id> or *: the name after "project:" is empty`},
		{[]string{"token", "create", "--file", filepath.Join(dir, "t.json"), "--name", "admin", "--read", "*", "--write", "projekt:x"}, exitUsage, `--write: "projekt:x" is not`},
		// not usage: what the command reads is not there
		{[]string{"digest", "--data", filepath.Join(dir, "none")}, 1, "holds no store"},
		{[]string{"ingest", filepath.Join(dir, "none.jsonl"), "--brokers", "127.0.0.1:1"}, 1, "none.jsonl"},
	} {
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("chronicle %s: %v, want exit status %d\n%s", strings.Join(c.args, " "), err, c.code, out)
			continue
		}
		if ee.ExitCode() != c.code || !strings.Contains(string(out), c.says) {
			t.Errorf("chronicle %s: exit status %d, want %d, saying %q:\n%s", strings.Join(c.args, " "), ee.ExitCode(), c.code, c.says, out)
		}
		if c.args[0] == "digest" && strings.Contains(string(out), "running on it holds it") {
			// no directory: nothing there for a serve to hold (an
			// operator's walkthrough, 2026-12-06)
			t.Errorf("chronicle %s: %s, want no hint of a process holding it", strings.Join(c.args, " "), out)
		}
	}
}

// TestUsageKeepsAnExitStatus: an error that carries its own exit status
// (audit's 2) keeps it when marked as usage, and usage(nil) is nil.
func TestUsageKeepsAnExitStatus(t *testing.T) {
	if usage(nil) != nil {
		t.Fatal("usage(nil) is not nil")
	}
	var ec exitCoder
	if err := usage(fail(2, "differs")); !errors.As(err, &ec) || ec.ExitCode() != 2 {
		t.Fatalf("usage(fail(2)): %v", err)
	}
	inner := errors.New("x")
	if err := usage(inner); !errors.Is(err, inner) || !errors.As(err, &ec) || ec.ExitCode() != exitUsage || err.Error() != "x" {
		t.Fatalf("usage(x): %v", err)
	}
}

// A --kafka-listen given to a command that takes --brokers instead is
// refused as an unknown flag, exit 64, saying what to give: replay, audit
// and deadletter start their embedded broker on a free loopback port, and
// their --brokers names a log another broker serves; ingest and the
// importers start none and write to --brokers. Before, only "unknown
// flag: --kafka-listen", to a user who guessed `audit --kafka-listen` as
// `chronicle broker` takes it (a walkthrough, 2026-12-07). A command
// without --brokers (digest) still says the bare refusal.
func TestKafkaListenWhereBrokersIsMeant(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"audit"}, "audit starts its embedded broker on DATA/log at a free loopback port"},
		{[]string{"replay"}, "give it as --brokers HOST:PORT"},
		{[]string{"deadletter", "list"}, "deadletter list starts its embedded broker on DATA/log at a free loopback port"},
		{[]string{"deadletter", "redrive", "--all"}, "give it as --brokers HOST:PORT"},
		{[]string{"ingest", "-"}, "ingest starts no broker; --brokers names the one it writes to (default 127.0.0.1:9092"},
		{[]string{"import", "taubench", "sample"}, "import taubench starts no broker; --brokers"},
		{[]string{"digest"}, "unknown flag: --kafka-listen\n"},
	} {
		args := append(c.args, "--kafka-listen", "127.0.0.1:9093")
		out, err := exec.Command(binary, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "unknown flag: --kafka-listen") || !strings.Contains(string(out), c.says) {
			t.Errorf("chronicle %s: %v, want exit status %d saying %q:\n%s", strings.Join(args, " "), err, exitUsage, c.says, out)
		}
	}
	// and their help says where the embedded broker listens
	for _, cmd := range []string{"audit", "replay"} {
		out, err := exec.Command(binary, cmd, "--help").Output()
		if err != nil || !strings.Contains(string(out), "the address a chronicle broker or serve listens on") || !strings.Contains(string(out), "at a free loopback port") {
			t.Errorf("chronicle %s --help: %v; want --brokers to name a chronicle broker and the embedded broker's free port:\n%s", cmd, err, out)
		}
	}
}
