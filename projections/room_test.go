package projections

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A store whose filesystem has less free space than its write-ahead logs
// plus OpenMargin is refused at open, saying how much is free and wanted
// (a sparse log larger than the free space stands in for a full disk).
// Before, Pebble's open on a full disk spun at full CPU without end.
func TestOpenRefusesAFullDisk(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Skipf("statfs: %v", err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.Create(filepath.Join(dir, "999999.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(free + 1<<30); err != nil {
		f.Close()
		t.Skipf("a sparse file of %d bytes: %v", free+1<<30, err)
	}
	f.Close()
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "MiB free on its filesystem") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("open with a log larger than the free space: %v; want a refusal saying so", err)
	}
}
