package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serve and demo that fail at start, their --kafka-listen in use, remove
// the data directory they made, and the parents of it they made, since it
// holds no record; a directory that existed before is left, with what it
// held. Before, both left DATA/log and DATA/projections behind, empty of
// records (the gap the README named under TestKafkaListenInUseNamesTheFlag).
func TestFailedStartRemovesTheDataDirItMade(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, c := range [][]string{
		{"serve", "--http", "127.0.0.1:0"},
		{"demo", "--json"},
	} {
		root := t.TempDir()
		made := filepath.Join(root, "made")          // missing, as its child
		data := filepath.Join(made, "by", "the-run") // three directories the run makes
		out, err := exec.Command(binary, append(c, "--data", data, "--kafka-listen", addr)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--kafka-listen "+addr+": the address is in use") {
			t.Fatalf("%s on an address in use: %v\n%s", c[0], err, out)
		}
		if _, err := os.Stat(made); !os.IsNotExist(err) {
			entries, _ := os.ReadDir(data)
			t.Errorf("%s left %s behind (%v), holding %v\n%s", c[0], made, err, entries, out)
		}
		if entries, err := os.ReadDir(root); err != nil || len(entries) > 0 {
			t.Errorf("%s: the directory that existed before, %s: %v, %v; want it there and empty as it was", c[0], root, entries, err)
		}

		// a directory that existed is left, with what it held
		existing := t.TempDir()
		if err := os.WriteFile(filepath.Join(existing, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err = exec.Command(binary, append(c, "--data", existing, "--kafka-listen", addr)...).CombinedOutput()
		if err == nil {
			t.Fatalf("%s on an address in use: exited 0\n%s", c[0], out)
		}
		if b, err := os.ReadFile(filepath.Join(existing, "notes.txt")); err != nil || string(b) != "mine" {
			t.Errorf("%s: a file of the existing --data: %q, %v", c[0], b, err)
		}
	}
}

// A failed start leaves a directory it made when it holds a record (a
// segment of the log with bytes in it: another client produced to the
// embedded broker while it started), and says nothing of removing it.
func TestFailedStartLeavesADirectoryHoldingRecords(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	made := noteData(data)
	seg := filepath.Join(data, "log", "partitions", "chronicle.sessions-0", "0.dat")
	if err := os.MkdirAll(filepath.Dir(seg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, []byte("a batch"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := errors.New("broker: start embedded broker: address already in use")
	if err := made.failedStart(start); err != start {
		t.Errorf("failed start of a directory holding records: %v, want the error as it was", err)
	}
	if _, err := os.Stat(seg); err != nil {
		t.Errorf("the segment: %v, want it left", err)
	}
	// emptied, the directory is the run's to remove
	if err := os.Truncate(seg, 0); err != nil {
		t.Fatal(err)
	}
	if err := made.failedStart(start); !errors.Is(err, start) || !strings.Contains(err.Error(), "was removed") {
		t.Errorf("failed start of an empty directory it made: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it removed", data, err)
	}
}
