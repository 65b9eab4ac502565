package projections

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	pebblev1 "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// legacyFormat reports whether dir holds a store written by Pebble v1 at
// its default format (FormatMostCompatible): every Chronicle data directory
// written before the store moved to Pebble v2. Such a store has a CURRENT
// file and no format-version marker, and Pebble v2 refuses to open it
// ("written in format major version 1, which is no longer supported").
func legacyFormat(fs vfs.FS, dir string) bool {
	names, err := fs.List(dir)
	if err != nil {
		return false // no directory yet: a new store
	}
	current := false
	for _, n := range names {
		if n == "CURRENT" {
			current = true
		}
		if strings.HasPrefix(n, "marker.format-version.") {
			return false
		}
	}
	return current
}

// upgradeLegacy ratchets the Pebble v1 store in dir to Pebble v1's newest
// format major version (FormatVirtualSSTables), which Pebble v2 opens and
// then ratchets to its own newest. Keys and values are unchanged, so a
// digest is the same before and after; only the store's format files are
// written. It takes the directory's lock like any open, so it fails while
// another process uses the store. Errors: the v1 open (a held lock, a
// read-only filesystem: copy the directory to a writable disk first) and
// a store on a filesystem other than the OS's (tests inject those; they
// never hold a legacy store).
func upgradeLegacy(fs vfs.FS, dir string, onFatal func(msg string)) error {
	if fs != vfs.Default {
		return fmt.Errorf("projections: %s holds a Pebble v1 store on a non-OS filesystem, which cannot be upgraded", dir)
	}
	db, err := pebblev1.Open(dir, &pebblev1.Options{FormatMajorVersion: pebblev1.FormatNewest, Logger: quietV1{onFatal}})
	if err != nil {
		if errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("projections: %s was written by a Chronicle before Pebble v2 and must be upgraded once (its format files rewritten, keys and values unchanged), which a read-only filesystem refuses: copy the directory to a writable disk and open it there: %w", dir, err)
		}
		if lockHeld(err) {
			return fmt.Errorf("projections: upgrade %s to the Pebble v2 format (is another chronicle process using it?): %w", dir, err)
		}
		return fmt.Errorf("projections: upgrade %s to the Pebble v2 format: %w", dir, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("projections: upgrade %s to the Pebble v2 format: close: %w", dir, err)
	}
	return nil
}

// quietV1 drops Pebble v1's informational log lines during an upgrade
// (failures come back as errors from Open and Close) and hands a fatal one
// to Options.OnFatal, as the store's own logger does.
type quietV1 struct{ onFatal func(msg string) }

func (quietV1) Infof(string, ...interface{})  {}
func (quietV1) Errorf(string, ...interface{}) {}
func (q quietV1) Fatalf(format string, args ...interface{}) {
	q.onFatal(fmt.Sprintf(format, args...))
}

// holdsStore returns nil when dir holds a Pebble store (a MANIFEST file,
// of either Pebble version), else an error naming the directory.
func holdsStore(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("projections: %s %w: %w", dir, ErrNoStore, err)
	}
	var marker string
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			return nil
		}
		if strings.HasPrefix(n, "marker.manifest.") || strings.HasSuffix(n, ".sst") {
			marker = n
		}
	}
	if marker != "" {
		// a store's files without its manifest: a damaged store, not
		// none (an SRE's walkthrough removed it and was told "holds no
		// store")
		return &UnreadableError{Dir: dir, Err: fmt.Errorf("no MANIFEST file, though it holds %s of a store", marker)}
	}
	return fmt.Errorf("projections: %s %w: no MANIFEST file", dir, ErrNoStore)
}

// ErrNoStore is wrapped by the error of opening a directory that holds no
// store (none there, or no MANIFEST file and no other file of a store).
var ErrNoStore = errors.New("holds no store")

// HoldsStore returns nil when dir on the OS filesystem holds a store, of
// either Pebble version (Pebble v2 writes no CURRENT file, so looking for
// one, as the commands did, took every new store for none), else an
// error naming dir and the reason.
func HoldsStore(dir string) error { return holdsStore(vfs.Default, dir) }
