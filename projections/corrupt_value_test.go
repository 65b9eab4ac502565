package projections_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A value kept out of its table (1 KiB or more: a blob file) that does
// not match its checksum when read (a byte changed on disk) is an error
// of Scan, Get, Diff and Digest naming the file, never a value: Pebble's iterator
// gives nil for such a value and keeps the error for its end (its Get,
// for the closer's Close). Before, Scan and Get
// handed nil to the caller, and GET /v1/sessions answered "unexpected end
// of JSON input"; Diff called the row absent from the live store, so
// audit printed "live: <absent>" for a row that is there (a disk
// walkthrough: one byte changed in a .blob file).
func TestCorruptedValueIsAnError(t *testing.T) {
	dir, good := t.TempDir(), filepath.Join(t.TempDir(), "good")
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := func(i int64) func(*projections.Tx, *events.Envelope) error {
		return func(tx *projections.Tx, _ *events.Envelope) error {
			return tx.Set(fmt.Sprint("r", i), bytes.Repeat([]byte{'a' + byte(i)}, 8<<10))
		}
	}
	for off := int64(0); off < 8; off++ {
		if _, err := s.Apply("big", projections.Position{Topic: "t", Offset: off}, feedback(t, fmt.Sprint("a", off)), big(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if out, err := exec.Command("cp", "-a", dir, good).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob"))
	if len(blobs) == 0 {
		t.Fatal("no blob file to damage")
	}
	raw, err := os.ReadFile(blobs[0])
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(blobs[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Scan("big", "", "", func(key string, val []byte) (bool, error) {
		if len(val) != 8<<10 {
			return false, fmt.Errorf("row %s handed over with %d bytes", key, len(val))
		}
		return true, nil
	})
	name := filepath.Base(blobs[0])
	if err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), strings.TrimSuffix(name, ".blob")) {
		t.Fatalf("Scan over a damaged value: %v, want an error naming the checksum and %s", err, name)
	}
	t.Log(err)
	for i := int64(0); i < 8; i++ {
		v, ok, err := s.Get("big", fmt.Sprint("r", i))
		if err == nil && (!ok || len(v) != 8<<10) {
			t.Fatalf("Get r%d of a damaged store: %d bytes, ok %v, no error", i, len(v), ok)
		}
	}
	if _, err := s.Digest(); err == nil || !strings.Contains(err.Error(), "chronicle replay --data") {
		t.Fatalf("Digest of a damaged store: %v, want an error saying to replay", err)
	}
	g, err := projections.Open(good, projections.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	d, err := projections.Diff(s, g)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Diff with a damaged value: difference %v, error %v; want an error naming the checksum", d, err)
	}
	t.Log(err)
}
