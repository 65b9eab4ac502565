package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	pebblev1 "github.com/cockroachdb/pebble"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// writeV1Projections writes DATA's projections as every Chronicle before
// the store moved to Pebble v2 (2026-11-30) did: Pebble v1 at its default
// format, which an older Chronicle can open and a newer one upgrades.
func writeV1Projections(t *testing.T, data string) {
	t.Helper()
	db, err := pebblev1.Open(pipeline.ProjectionsDir(data), &pebblev1.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("p/count/s-1"), []byte(`{"n":2}`), pebblev1.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

const upgradedLine = "upgraded"

// TestEveryCommandSaysItUpgradedTheStore: digest and inspect, which open a
// directory read-only, upgrade a Pebble v1 store in place as serve does,
// after which an older Chronicle cannot open it; each says so on stderr,
// once (before, only serve did: the rolling-upgrade walkthrough,
// 2026-12-07).
func TestEveryCommandSaysItUpgradedTheStore(t *testing.T) {
	t.Run("digest", func(t *testing.T) {
		data := t.TempDir()
		writeV1Projections(t, data)
		for i, want := range []bool{true, false} { // the second open finds v2
			cmd := exec.Command(binary, "digest", "--data", data)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("digest %d: %v\n%s", i+1, err, errb.String())
			}
			if got := strings.Contains(errb.String(), upgradedLine); got != want {
				t.Fatalf("digest %d: stderr says the upgrade: %v, want %v:\n%s", i+1, got, want, errb.String())
			}
			if want && !strings.Contains(errb.String(), pipeline.ProjectionsDir(data)) {
				t.Fatalf("digest: the upgrade line does not name the directory %s:\n%s", pipeline.ProjectionsDir(data), errb.String())
			}
			if !strings.Contains(out.String(), "count") {
				t.Fatalf("digest %d: the v1 store's projection is not in the digest:\n%s", i+1, out.String())
			}
		}
	})
	t.Run("inspect", func(t *testing.T) {
		data := t.TempDir()
		writeV1Projections(t, data)
		// a busy --http address: inspect opens the store, then refuses
		// the address, so the run ends on its own
		srv := httptest.NewServer(http.NotFoundHandler())
		defer srv.Close()
		busy := strings.TrimPrefix(srv.URL, "http://")
		for i, want := range []bool{true, false} {
			out, err := exec.Command(binary, "inspect", "--data", data, "--http", busy).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--http "+busy) {
				t.Fatalf("inspect %d on a busy port: %v\n%s\nwant the refusal of --http", i+1, err, out)
			}
			if got := strings.Contains(string(out), upgradedLine); got != want {
				t.Fatalf("inspect %d: says the upgrade: %v, want %v:\n%s", i+1, got, want, out)
			}
		}
	})
}
