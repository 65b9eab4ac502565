package projections_test

import (
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// erofs is the OS filesystem mounted read-only: every call that would
// create, change or lock a file fails with EROFS, as on a snapshot
// mounted with -o ro.
type erofs struct{ vfs.FS }

func rofail(op, name string) error { return &os.PathError{Op: op, Path: name, Err: syscall.EROFS} }

func (erofs) Create(name string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, rofail("open", name)
}
func (erofs) OpenReadWrite(name string, _ vfs.DiskWriteCategory, _ ...vfs.OpenOption) (vfs.File, error) {
	return nil, rofail("open", name)
}
func (erofs) Link(o, n string) error      { return rofail("link", n) }
func (erofs) Remove(name string) error    { return rofail("remove", name) }
func (erofs) RemoveAll(name string) error { return rofail("remove", name) }
func (erofs) Rename(o, n string) error    { return rofail("rename", n) }
func (erofs) ReuseForWrite(o, n string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, rofail("open", n)
}
func (erofs) MkdirAll(dir string, _ os.FileMode) error { return rofail("mkdir", dir) }
func (erofs) Lock(name string) (io.Closer, error)      { return nil, rofail("open", name) }

// TestReadOnlyOpenOfAReadOnlyFilesystem: a store on a filesystem mounted
// read-only opens ReadOnly (chronicle inspect, digest of a snapshot) and
// answers what it holds. Before, Pebble's LOCK file, which it creates and
// opens for writing even in read-only mode, failed the open: "open
// …/LOCK: read-only file system" (an SRE drill). A store opened for
// writing there still fails.
func TestReadOnlyOpenOfAReadOnlyFilesystem(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Skip("count", projections.Position{Topic: "t", Offset: 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: 1}, feedback(t, "a"), counter); err != nil {
		t.Fatal(err)
	}
	want, err := s.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := projections.Open(dir, projections.Options{ReadOnly: true, FS: erofs{vfs.Default}})
	if err != nil {
		t.Fatalf("read-only open on a read-only filesystem: %v", err)
	}
	got, err := ro.Digest()
	if err != nil || got.All != want.All {
		t.Fatalf("digest on the read-only filesystem %v (%v), want %v", got, err, want)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := projections.Open(dir, projections.Options{FS: erofs{vfs.Default}}); err == nil {
		t.Fatal("a store opened for writing on a read-only filesystem")
	}
}
