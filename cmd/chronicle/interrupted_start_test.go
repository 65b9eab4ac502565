package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/spf13/cobra"
)

// runInProcess runs cmd (a command of this package, outside the root) with
// args under ctx, as main would, and returns its error. A ctx cancelled is
// a signal to the command: its signal context derives from it.
func runInProcess(ctx context.Context, cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(ctx)
}

// cancelled is a context cancelled already: the signal came before the
// command's first wait.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// wantInterrupted fails t unless err says a signal interrupted what, in the
// words the CLI uses for the other interrupted commands, and more than the
// bare "context canceled" it said before.
func wantInterrupted(t *testing.T, what string, err error, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error (finished before the cancel?)", what)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "interrupted by a signal") {
		t.Errorf("%s interrupted: %q\nwant it to start \"interrupted by a signal\"", what, msg)
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("%s interrupted: %q\nwant it to say %q", what, msg, s)
		}
	}
}

// audit stopped by a signal says it was interrupted and that the live
// projections were only read, and leaves no temporary replay behind: it
// said "context canceled", or "broker: describe topics on […]: unable to
// dial: … operation was canceled" when the signal came while its embedded
// broker started (found by running it under `timeout -s INT`). The signal
// is given twice: before anything starts, and once the replay's temporary
// directory is made.
func TestInterruptedAuditSaysSo(t *testing.T) {
	data := t.TempDir()
	runDemo(t, data)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's directory: the replay's is watched
	err := runInProcess(cancelled(), auditCmd(), "--data", data)
	wantInterrupted(t, "audit at start", err, "nothing was compared", "run the audit again")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer cancel()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			if m, _ := filepath.Glob(filepath.Join(tmp, "chronicle-audit-*")); len(m) > 0 {
				return
			}
		}
	}()
	err = runInProcess(ctx, auditCmd(), "--data", data)
	close(done)
	wantInterrupted(t, "audit mid-replay", err, "nothing was compared", "run the audit again")
	if m, _ := filepath.Glob(filepath.Join(tmp, "chronicle-audit-*")); len(m) > 0 {
		t.Errorf("the interrupted audit left %v behind", m)
	}
	// the directory is as good as before: the audit passes
	if err := runInProcess(context.Background(), auditCmd(), "--data", data); err != nil {
		t.Fatalf("audit after the interrupted ones: %v", err)
	}
}

// demo and serve stopped by a signal while the pipeline starts say so, and
// that nothing was imported or served: they said "context canceled", or
// "broker: log …/log: closing the transactions a killed process left open:
// … context canceled" (found by running them under `timeout -s INT`). The
// data directory they made is removed: it holds no record.
func TestInterruptedStartSaysSo(t *testing.T) {
	for _, c := range []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		says string
	}{
		{"demo", demoCmd, []string{"--json"}, "no event was imported"},
		{"serve", serveCmd, []string{"--http", "127.0.0.1:0"}, "nothing was served"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		err := runInProcess(cancelled(), c.cmd(), append(c.args, "--data", data, "--kafka-listen", "127.0.0.1:0")...)
		wantInterrupted(t, c.name+" while starting", err, c.says, "running the command again is safe")
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%s interrupted while starting left %s behind (%v)", c.name, data, err)
		}
	}
}

// inspect stopped by a signal while it builds the search index says so,
// and that it wrote nothing: it said "inspect: index the memory bank:
// search: Memory: search: embed with use-lite-512…: context canceled" and
// two more such lines (found by running it under `timeout -s INT`).
func TestInterruptedInspectSaysSo(t *testing.T) {
	_, data := cleanDemo(t)
	projs := pipeline.ProjectionsDir(data)
	before := listing(t, projs)
	err := runInProcess(cancelled(), inspectCmd(), "--data", data, "--http", "127.0.0.1:0")
	wantInterrupted(t, "inspect while indexing", err, "search index", "nothing in "+data+" was written")
	if after := listing(t, projs); after != before {
		t.Errorf("the interrupted inspect changed %s:\nbefore\n%s\nafter\n%s", projs, before, after)
	}
}

// listing is every file under dir with its size and modification time
// (but the lock's, which a read-only open takes too).
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d", path, fi.Size())
		if !fi.IsDir() && fi.Name() != "LOCK" {
			fmt.Fprintf(&b, " %s", fi.ModTime())
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
