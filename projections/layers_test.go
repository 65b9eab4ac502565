package projections_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Dependencies run one way: cmd → processors → projections → events →
// schemas. Every non-test file of the module is checked: no package may
// import a package of a higher layer (issue 10 item 10: projections/search
// imported three processor packages).
func TestLayersRunOneWay(t *testing.T) {
	const module = "github.com/chronicle-dev/chronicle/"
	rank := func(path string) int {
		for i, top := range []string{"schemas", "events", "projections", "processors", "cmd"} {
			if path == top || strings.HasPrefix(path, top+"/") {
				return i
			}
		}
		return -1
	}
	root := ".."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		from := rank(filepath.ToSlash(rel))
		if from < 0 {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if to := rank(strings.TrimPrefix(p, module)); to > from {
				t.Errorf("%s imports %s: dependencies run cmd → processors → projections → events → schemas", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}
