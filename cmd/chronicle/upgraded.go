package main

import (
	"fmt"
	"io"

	"github.com/chronicle-dev/chronicle/projections"
)

// sayUpgraded writes one line to w when the open that returned st upgraded
// dir in place from the Pebble v1 format (projections.Store.UpgradedFormat):
// such a directory can no longer be opened by an older Chronicle, which an
// operator who keeps one for a rollback must know. serve said so; digest,
// inspect, audit and replay's check of --into upgraded silently, so a
// read-only command changed the directory without a word (the rolling-upgrade
// walkthrough, 2026-12-07).
func sayUpgraded(w io.Writer, st *projections.Store, dir string) {
	if st.UpgradedFormat() {
		fmt.Fprintf(w, "chronicle: upgraded %s in place from the Pebble v1 format of a Chronicle before 2026-11-30 (keys and values unchanged): an older Chronicle can no longer open it\n", dir)
	}
}
