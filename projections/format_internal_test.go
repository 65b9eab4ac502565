package projections

import (
	"strings"
	"testing"

	pebblev1 "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeLegacy writes a store the way every Chronicle before the move to
// Pebble v2 did: Pebble v1 at its default format (FormatMostCompatible),
// which Pebble v2 refuses to open.
func writeLegacy(t *testing.T, dir string, kv map[string]string) {
	t.Helper()
	db, err := pebblev1.Open(dir, &pebblev1.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := db.FormatMajorVersion(); v != pebblev1.FormatMostCompatible {
		t.Fatalf("a default v1 store is at format %v, want FormatMostCompatible", v)
	}
	for k, v := range kv {
		if err := db.Set([]byte(k), []byte(v), pebblev1.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil { // some rows in an sstable, some in the WAL
		t.Fatal(err)
	}
	if err := db.Set([]byte(prefixProjection+"count/late"), []byte(`{"n":3}`), pebblev1.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLegacyStoreIsUpgraded: a data directory written before the store
// moved to Pebble v2 opens (read-only, as digest and inspect open it, and
// for writing) with every row as it was; before the upgrade step Pebble v2
// refused it ("written in format major version 1, which is no longer
// supported").
func TestLegacyStoreIsUpgraded(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		dir := t.TempDir()
		writeLegacy(t, dir, map[string]string{prefixProjection + "count/a": `{"n":1}`, prefixProjection + "count/b": `{"n":2}`})
		if !legacyFormat(vfs.Default, dir) {
			t.Fatal("a v1 store at FormatMostCompatible is not recognised as legacy")
		}
		s, err := Open(dir, Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatalf("open (read-only %v) of a legacy store: %v", readOnly, err)
		}
		if !s.UpgradedFormat() {
			t.Fatalf("read-only %v: the open that upgraded the store does not say so (UpgradedFormat false)", readOnly)
		}
		for k, want := range map[string]int{"a": 1, "b": 2, "late": 3} {
			var v struct{ N int }
			ok, err := s.GetJSON("count", k, &v)
			if err != nil || !ok || v.N != want {
				t.Fatalf("read-only %v: row %s = %+v, %v, %v; want n=%d", readOnly, k, v, ok, err, want)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if legacyFormat(vfs.Default, dir) {
			t.Fatal("still legacy after the upgrade")
		}
		s, err = Open(dir, Options{})
		if err != nil {
			t.Fatalf("reopen after the upgrade: %v", err)
		}
		if s.UpgradedFormat() {
			t.Fatal("a reopen after the upgrade says it upgraded the store again")
		}
		s.Close()
	}
}

// TestLegacyStoreUpgradeNeedsTheOSFilesystem: a legacy store seen through
// another filesystem (a read-only mount's) is refused with an error naming
// the directory, and left as it was.
func TestLegacyStoreUpgradeNeedsTheOSFilesystem(t *testing.T) {
	dir := t.TempDir()
	writeLegacy(t, dir, map[string]string{prefixProjection + "count/a": `{"n":1}`})
	_, err := Open(dir, Options{ReadOnly: true, FS: otherFS{vfs.Default}})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open through another filesystem: %v, want an error naming %s", err, dir)
	}
	if !legacyFormat(vfs.Default, dir) {
		t.Fatal("the refused store was changed")
	}
}

// otherFS is the OS filesystem behind a wrapper, as a read-only mount's.
type otherFS struct{ vfs.FS }
