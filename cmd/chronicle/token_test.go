package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

// A repeated --read or --write adds to the list, as a comma does: the last
// one alone was kept, silently, so the stored grant differed from what the
// operator typed (a security review, 2026-11-30).
func TestTokenCreateRepeatedScopes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.json")
	out, err := exec.Command(binary, "token", "create", "--file", file, "--name", "multi",
		"--read", "project:b", "--read", "project:c,team:x", "--write", "project:c", "--write", "project:b").CombinedOutput()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, out)
	}
	f, err := access.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	tk := f.Tokens[0]
	if !slices.Equal(tk.Read, []string{"project:b", "project:c", "team:x"}) || !slices.Equal(tk.Write, []string{"project:c", "project:b"}) {
		t.Fatalf("stored read %v, write %v; want every value given", tk.Read, tk.Write)
	}
}
