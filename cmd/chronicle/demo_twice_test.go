package main

import "testing"

// `chronicle demo` run twice on one data directory imports the sample
// again: the second import is all duplicates, which change nothing (README:
// "same digest both times"), and TestCrashRecovery's restarts re-import the
// same way. With positions masked (maskedRows, as TestCrashRecovery compares
// them) the rows must be those of the first run.
func TestDemoTwiceOnOneDirectoryChangesNoRow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the full demo twice")
	}
	data := t.TempDir()
	first := runDemo(t, data)
	before := maskedRows(t, data)
	second := runDemo(t, data)
	after := maskedRows(t, data)
	if d := firstDifference(before, after); d != "" || first.Digest != second.Digest {
		t.Fatalf("demo twice on one directory: digest %s then %s; rows with positions masked: %s", first.Digest, second.Digest, d)
	}
}
