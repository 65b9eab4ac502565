package broker

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

type erofsLock struct{ vfs.FS }

func (erofsLock) Lock(name string) (io.Closer, error) {
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EROFS}
}

// TestLockOnAReadOnlyFilesystem: a log on a filesystem mounted read-only
// is refused naming the read-only filesystem and what to do. Before, the
// error said another chronicle process used the log (ErrLogInUse), which
// sent an SRE drilling `replay` of a read-only snapshot looking for a
// process that did not exist.
func TestLockOnAReadOnlyFilesystem(t *testing.T) {
	defer func(fs vfs.FS) { lockFS = fs }(lockFS)
	lockFS = erofsLock{vfs.Default}
	_, err := lockLog(t.TempDir())
	if err == nil || errors.Is(err, ErrLogInUse) || !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "read-only filesystem") {
		t.Fatalf("lock on a read-only filesystem: %v", err)
	}
}

type eaccesLock struct{ vfs.FS }

func (eaccesLock) Lock(name string) (io.Closer, error) {
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
}

// TestLockPermissionDenied: a log this user may not write is refused
// saying so, not as a log in use by another chronicle process (an SRE's
// walkthrough, 2026-11-30: serve, broker and deadletter list as another
// user said the log was in use while nothing ran). (The injected lock
// stands in for a LOCK owned by another user: tests run as root, whom
// the mode would not stop.)
func TestLockPermissionDenied(t *testing.T) {
	defer func(fs vfs.FS) { lockFS = fs }(lockFS)
	lockFS = eaccesLock{vfs.Default}
	_, err := lockLog(t.TempDir())
	if err == nil || errors.Is(err, ErrLogInUse) || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "may not write") {
		t.Fatalf("lock without permission: %v", err)
	}
}
