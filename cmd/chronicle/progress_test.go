package main

import (
	"strings"
	"testing"
)

// A progress bar names what it counts: on a terminal the rate carries the
// unit ("(99/99, … records/s)"), and with stderr no terminal its one line
// says "chronicle: WHAT (TOTAL UNIT)". Before, replay printed "chronicle:
// replaying (99)", 99 of nothing named (a walkthrough, 2026-12-07).
func TestProgressBarNamesItsUnit(t *testing.T) {
	var file strings.Builder
	bar := newProgressBar(&file, false, 99, "replaying the log", "records")
	_ = bar.Set64(50)
	_ = bar.Set64(99)
	if got, want := file.String(), "chronicle: replaying the log (99 records)\n"; got != want {
		t.Errorf("into a file: %q, want %q and no redraw", got, want)
	}
	var tty strings.Builder
	bar = newProgressBar(&tty, true, 99, "replaying the log", "records")
	_ = bar.Set64(99)
	s := tty.String()
	if !strings.Contains(s, "replaying the log") || !strings.Contains(s, "99/99") || !strings.Contains(s, " records/") || !strings.HasSuffix(s, "\n") {
		t.Errorf("on a terminal: %q; want the description, the count 99/99, a rate in records and the line ended", s)
	}
}
