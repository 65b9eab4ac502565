package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressBar is a progress bar on stderr for total steps of what. On a
// terminal it redraws itself, at most every 100 ms, and ends its line when
// it completes (a line printed after it no longer starts on the bar's).
// When stderr is no terminal (a file, a pipe, a log collector) it draws
// nothing but one line as it starts, "chronicle: WHAT (TOTAL)": its
// redraws, separated by carriage returns, went into such files too (83 of
// them, 5.6 KB, in the stderr of one `demo --json >out 2>err`: a CLI
// walkthrough, 2026-12-05), though the comment of the code said it drew
// nothing there.
func progressBar(total int64, what string) *progressbar.ProgressBar {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		fmt.Fprintf(os.Stderr, "chronicle: %s (%d)\n", what, total)
		return progressbar.NewOptions64(total, progressbar.OptionSetWriter(io.Discard), progressbar.OptionSetVisibility(false))
	}
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }))
}
