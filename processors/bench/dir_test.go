package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/bench"
)

// A Dir that holds anything is refused before anything is written: a
// second run into one directory appended its events to the first run's log
// and failed a second later with the engine's internals (an operator's
// walkthrough, 2026-11-30).
func TestRunRefusesADirThatIsNotEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "left-over"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := bench.Run(context.Background(), bench.Config{Events: 10, Runs: 1, Probes: 1, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a Dir holding a file: %v, want an error saying it is not empty", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the refused Dir holds %d entries afterwards, want the 1 it had", len(ents))
	}
}
