package projections

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walGuardFS is the store's filesystem with its write-ahead logs guarded:
// the first write, sync or close of a log (*.log) that fails calls
// onFatal with the cause, from inside that call, before Pebble sees the
// error. Pebble cannot go on after such a failure, and one of its paths
// to it (closing the previous log while it rotates to a new one, when a
// memtable fills) panics after releasing a mutex its caller then unlocks
// again: a Go fatal error ("sync: unlock of unlocked mutex") that no
// recover catches, so `serve` on a full disk died with a runtime stack
// that named neither the disk nor exit status 70 (an SRE's walkthrough,
// 2026-12-03, one run in seven on a 40 MB tmpfs). The other paths (an
// append, a sync) went to Options.OnFatal already (Store.write,
// fatalLogger); this makes every one of them do so first.
type walGuardFS struct {
	vfs.FS
	onFatal func(string)
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// Create implements vfs.FS.
func (fs walGuardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &walGuardFile{File: f, name: name, onFatal: fs.onFatal}, nil
}

// ReuseForWrite implements vfs.FS (Pebble recycles a flushed log's file).
func (fs walGuardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return &walGuardFile{File: f, name: newname, onFatal: fs.onFatal}, nil
}

// walGuardFile is a write-ahead log whose failed writes are fatal
// (walGuardFS).
type walGuardFile struct {
	vfs.File
	name    string
	onFatal func(string)
}

func (f *walGuardFile) fail(op string, err error) error {
	if err != nil {
		f.onFatal(fmt.Sprintf("projections: write failed: %s of the write-ahead log %s: %v", op, f.name, err))
	}
	return err
}

func (f *walGuardFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fail("write", err)
}

func (f *walGuardFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.fail("write", err)
}

func (f *walGuardFile) Sync() error { return f.fail("sync", f.File.Sync()) }

func (f *walGuardFile) SyncData() error { return f.fail("sync", f.File.SyncData()) }

func (f *walGuardFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.fail("sync", err)
}

func (f *walGuardFile) Close() error { return f.fail("close", f.File.Close()) }
