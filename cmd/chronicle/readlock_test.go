package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
)

// A --lock file that is no lock of `chronicle solver lock` — another JSON
// object, or a lock edited after it was written — is refused saying so;
// before, {"x":1} read as a solver that differs from "search ", and an
// edited prompt hash as a prompt that differs (a walkthrough, 2026-11-30).
func TestReadLockRefusesWhatIsNoLock(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	l := treesearch.SolverLock("s1", game24.Config(5), "", game24.Arithmetic{}, game24.Arithmetic{})
	if _, err := readLock(write("ok.json", l)); err != nil {
		t.Fatalf("a lock as written: %v", err)
	}
	edited := l
	edited.Prompts = map[string]string{}
	for k, v := range l.Prompts {
		edited.Prompts[k] = v
	}
	for k := range edited.Prompts {
		edited.Prompts[k] = strings.Repeat("0", 64)
		break
	}
	for name, v := range map[string]any{"other.json": map[string]int{"x": 1}, "edited.json": edited, "empty.json": map[string]any{}} {
		if _, err := readLock(write(name, v)); err == nil || !strings.Contains(err.Error(), "not a lock file") {
			t.Errorf("%s: %v; want a refusal saying it is not a lock file", name, err)
		}
	}
}
