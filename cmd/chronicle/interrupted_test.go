package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A producing command stopped by a signal says so, and that running it
// again is safe; it read as the broker's failure ("not acknowledged by the
// broker: … context canceled": an SRE's walkthrough, 2026-11-30). An error
// without a signal is left as it is.
func TestInterruptedSaysSo(t *testing.T) {
	produce := errors.New("events: not acknowledged by the broker: context canceled")
	ctx, cancel := context.WithCancel(context.Background())
	if err := interrupted(ctx, produce); err != produce {
		t.Fatalf("no signal: %v, want the error as it is", err)
	}
	if err := interrupted(ctx, nil); err != nil {
		t.Fatalf("no error: %v", err)
	}
	cancel()
	err := interrupted(ctx, produce)
	if !errors.Is(err, produce) || !strings.HasPrefix(err.Error(), "interrupted by a signal") || !strings.Contains(err.Error(), "running the command again is safe") {
		t.Fatalf("after a signal: %v", err)
	}
}

// ingest and import stopped by a signal while they wait for --brokers to
// answer say they were interrupted, not that no broker answered: Ctrl-C
// 0.3 s into an import of a running broker said "no broker answered:
// within 15s: context canceled" (a CLI walkthrough, 2026-12-05). The
// broker here accepts and never answers, so the wait lasts until the
// signal.
func TestInterruptedWhileAskingTheBrokers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, args := range [][]string{
		{"import", "taubench", "sample"},
		{"ingest", "-"},
	} {
		cmd := exec.Command(binary, append(args, "--brokers", ln.Addr().String())...)
		cmd.Stdin = strings.NewReader("")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the signal handler is installed, the ping waits
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out.String(), "interrupted by a signal") || strings.Contains(out.String(), "no broker answered") {
			t.Errorf("%v interrupted: %v\n%s\nwant exit 1 saying interrupted, not that no broker answered", args, err, out.String())
		}
	}
}

// search game24 and import tot stopped by a signal mid-search say they
// were interrupted and that running them again resumes; they said
// "events: not acknowledged by the broker: … context canceled" (a CLI
// walkthrough, 2026-12-05). The same command then completes.
func TestInterruptedSearchSaysItResumes(t *testing.T) {
	for _, args := range [][]string{
		{"search", "game24", "--from", "901", "--to", "1000", "--baseline=false"},
		{"import", "tot", "bundled"},
	} {
		args = append(args, "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0")
		cmd := exec.Command(binary, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// the progress bar's line (stderr is a pipe: one line as it
		// starts): searches are running
		var seen strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(seen.String(), "chronicle: searching (100 puzzles)") && !strings.Contains(seen.String(), "chronicle: import tot (100 runs)") {
			n, err := stderr.Read(buf)
			seen.Write(buf[:n])
			if err != nil {
				t.Fatalf("%v: stderr ended before the first search: %v\n%s", args, err, seen.String())
			}
		}
		time.Sleep(200 * time.Millisecond) // into the searches
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(stderr)
		seen.Write(rest)
		err = cmd.Wait()
		if err == nil {
			t.Fatalf("%v: exited 0 (finished before the signal?)", args)
		}
		if s := seen.String(); !strings.Contains(s, "interrupted by a signal") || !strings.Contains(s, "resumes the searches") {
			t.Errorf("%v interrupted: %v\n%s\nwant it to say it was interrupted and that running it again resumes", args, err, s[max(0, len(s)-600):])
		}
		if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
			t.Errorf("%v run again: %v\n%s", args, err, out)
		}
	}
}
