package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressBar is a progress bar on stderr for total steps of what, counted
// in unit (records, events, puzzles: a plural noun). On a terminal it
// redraws itself, at most every 100 ms, showing the count and the rate in
// unit ("(50/99, 1204 records/s)"), and ends its line when it completes (a
// line printed after it no longer starts on the bar's). When stderr is no
// terminal (a file, a pipe, a log collector) it draws nothing but one
// line as it starts, "chronicle: WHAT (TOTAL UNIT)": its redraws,
// separated by carriage returns, went into such files too (83 of them,
// 5.6 KB, in the stderr of one `demo --json >out 2>err`: a CLI
// walkthrough, 2026-12-05), though the comment of the code said it drew
// nothing there. Before the unit, the line read "chronicle: replaying
// (99)", 99 of nothing named (a walkthrough, 2026-12-07).
func progressBar(total int64, what, unit string) *progressbar.ProgressBar {
	return newProgressBar(os.Stderr, term.IsTerminal(int(os.Stderr.Fd())), total, what, unit)
}

// newProgressBar is progressBar writing to w, a terminal or not.
func newProgressBar(w io.Writer, terminal bool, total int64, what, unit string) *progressbar.ProgressBar {
	if !terminal {
		fmt.Fprintf(w, "chronicle: %s (%d %s)\n", what, total, unit)
		return progressbar.NewOptions64(total, progressbar.OptionSetWriter(io.Discard), progressbar.OptionSetVisibility(false))
	}
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
}
