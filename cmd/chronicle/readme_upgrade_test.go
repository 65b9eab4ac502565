package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeRollingUpgradesNamesTestsThatExist: the README's "Rolling
// upgrades" section stands between "Adding and removing an instance" and
// "Any instance answers any read", where an operator replacing instances
// reads, and every test it cites for a claim is a test of the repository
// (a renamed or removed test fails here instead of leaving the claim
// unbacked). The section was written from an upgrade walkthrough,
// 2026-12-07.
func TestReadmeRollingUpgradesNamesTestsThatExist(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	add := strings.Index(readme, "\n### Adding and removing an instance\n")
	up := strings.Index(readme, "\n### Rolling upgrades\n")
	next := strings.Index(readme, "\n### Any instance answers any read\n")
	if add < 0 || up < 0 || next < 0 || !(add < up && up < next) {
		t.Fatalf(`"### Rolling upgrades" must stand between "### Adding and removing an instance" and "### Any instance answers any read" (offsets %d, %d, %d)`, add, up, next)
	}
	section := readme[up:next]
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = false
	}
	if len(named) == 0 {
		t.Fatal("the Rolling upgrades section cites no test")
	}
	defined := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range defined.FindAllStringSubmatch(string(src), -1) {
			if _, ok := named[m[1]]; ok {
				named[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, ok := range named {
		if !ok {
			t.Errorf("the Rolling upgrades section cites %s, which no _test.go file defines", name)
		}
	}
}
