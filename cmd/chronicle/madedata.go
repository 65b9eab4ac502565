package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// madeData is the data directory of a command that makes it as it starts
// (serve, demo), with what of its path was missing before the command
// ran: a start that fails before any record is written removes what the
// command made, and nothing else. Before, serve and demo whose
// --kafka-listen was in use left DATA/log and DATA/projections behind,
// empty of records (a CLI walkthrough, 2026-12-05), where an empty store
// reads as a real, empty state to digest and inspect.
type madeData struct {
	dir string // the data directory, absolute
	top string // the outermost directory of dir's path that was missing; "" when dir existed
}

// noteData notes which directories of data's path are missing now, before
// the command makes any. A path it cannot read is taken as existing: the
// command then removes nothing.
func noteData(data string) madeData {
	dir, err := filepath.Abs(data)
	if err != nil {
		return madeData{}
	}
	m := madeData{dir: dir}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				m.top = "" // unreadable: not known to be the command's
			}
			return m
		}
		m.top = d
		if filepath.Dir(d) == d {
			return m
		}
	}
}

// failedStart is err of a start that failed, once the data directory and
// the missing parents of it the command made are removed, when it made
// them and the directory holds no record: no segment of the embedded
// broker's log holds a byte, and the projections hold no processor's
// position. err says what was removed; without removal, or with none to
// do, it is returned as it is. It is called once the pipeline is closed.
func (m madeData) failedStart(err error) error {
	if err == nil || m.top == "" || holdsRecords(m.dir) {
		return err
	}
	if rerr := os.RemoveAll(m.dir); rerr != nil {
		return fmt.Errorf("%w (and removing %s, which this run made, empty of records: %v)", err, m.dir, rerr)
	}
	// the parents it made, each only when empty: os.Remove refuses
	// another's
	removed := m.dir
	for removed != m.top && os.Remove(filepath.Dir(removed)) == nil {
		removed = filepath.Dir(removed)
	}
	return fmt.Errorf("%w (%s, which this run made, was removed: it held no record)", err, removed)
}

// holdsRecords reports whether data holds a record, or may: a log segment
// (DATA/log/partitions/*/*.dat) that is not empty, or projections with a
// processor's position (a store that applied a record of --brokers), or
// either unreadable.
func holdsRecords(data string) bool {
	segs, err := filepath.Glob(filepath.Join(pipeline.LogDir(data), "partitions", "*", "*.dat"))
	if err != nil {
		return true
	}
	for _, s := range segs {
		if fi, err := os.Stat(s); err != nil || fi.Size() > 0 {
			return true
		}
	}
	dir := pipeline.ProjectionsDir(data)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false
	}
	st, err := projections.Open(dir, projections.Options{ReadOnly: true})
	if err != nil {
		return true
	}
	defer st.Close()
	sayUpgraded(os.Stderr, st, dir)
	return len(st.Offsets()) > 0
}
