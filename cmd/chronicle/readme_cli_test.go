package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The README's CLI table names every subcommand of chronicle workflow: its
// row listed state|history|at|resume|answer, not list, which a new user
// looking for the workflows the token reads did not find there (found by
// a new user's walkthrough).
func TestReadmeCLITableNamesEveryWorkflowSubcommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range bytes.Split(readme, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("| `chronicle workflow ")) {
			row = string(l)
			break
		}
	}
	if row == "" {
		t.Fatal("the README's CLI table has no `chronicle workflow …` row")
	}
	cell, _, _ := strings.Cut(strings.TrimPrefix(row, "| `chronicle workflow "), "`")
	names, _, _ := strings.Cut(cell, " ")
	listed := strings.Split(strings.ReplaceAll(names, `\|`, "|"), "|")
	for _, sub := range workflowCmd().Commands() {
		if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		found := false
		for _, n := range listed {
			found = found || n == sub.Name()
		}
		if !found {
			t.Errorf("the README's CLI row %q does not name chronicle workflow %s", cell, sub.Name())
		}
	}
}
