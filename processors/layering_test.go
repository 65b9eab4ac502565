package processors_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers are the module's top-level directories in the order they may
// depend on each other: a package may import its own layer and the layers
// before it, never one after (cmd → processors → projections → events →
// schemas). The README's layout and the processors package comment state
// the rule; nothing held it but import cycles, which do not catch, say, a
// projection importing a processor's subpackage that imports nothing back
// (a new contributor's walkthrough, 2026-12-07).
var layers = []string{"schemas", "events", "projections", "processors", "cmd"}

const module = "github.com/chronicle-dev/chronicle/"

func layerOf(rel string) int {
	top, _, _ := strings.Cut(rel, "/")
	for i, l := range layers {
		if top == l {
			return i
		}
	}
	return -1
}

// Every non-test Go file imports only its own layer and those before it.
func TestLayering(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		from := layerOf(filepath.ToSlash(rel))
		if from < 0 {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if to := layerOf(strings.TrimPrefix(p, module)); to > from {
				t.Errorf("%s (layer %s) imports %s (layer %s): a package imports its own layer and those before it only (%s)", rel, layers[from], p, layers[to], strings.Join(layers, " ← "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked %d files under %s: the walk missed the module", files, root)
	}
}
