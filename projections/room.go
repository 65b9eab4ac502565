package projections

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// OpenMargin is the free space, beyond the size of the store's write-ahead
// logs, that Open wants on the store's filesystem (16 MiB): opening
// replays the logs into a new table, and writes a manifest and a fresh log.
const OpenMargin = 16 << 20

// roomToOpen refuses, saying how much is free and how much is wanted, to
// open the store in dir when its filesystem has less free space than the
// write-ahead logs to replay plus OpenMargin. Before, serve restarted on a
// full disk hung in Pebble's open at full CPU, its flush retrying without
// end, /healthz saying "starting" and SIGTERM not ending it (an operator's
// walkthrough, 2026-11-30). An error of statfs itself is no refusal.
func roomToOpen(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	var logs int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
				logs += fi.Size()
			}
		}
	}
	if want := logs + OpenMargin; free < want {
		return fmt.Errorf("projections: open %s: %d MiB free on its filesystem, below the %d MiB opening it needs (its write-ahead logs, %d MiB, replayed into a table, and %d MiB more): free space, or move the data directory (no space left on device)",
			dir, free>>20, want>>20, logs>>20, OpenMargin>>20)
	}
	return nil
}
