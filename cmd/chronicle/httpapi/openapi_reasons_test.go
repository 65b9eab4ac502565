package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/memories"
)

// TestOpenAPIMemoryHistoryReasons: every history reason the memories
// processor can write (memories.Reasons) is a value of openapi.json's
// MemoryHistory changes[].reason enum — a client validating a history
// answer against the description must not reject a "repeat" or an
// "ignored: pruned" entry. So that a new reason cannot bypass the list,
// the processor's source is checked too: every Reason* constant is in
// memories.Reasons, and no Change{Reason: …}, setConfidence reason or
// reason/why variable is a bare string literal.
func TestOpenAPIMemoryHistoryReasons(t *testing.T) {
	doc := loadOpenAPI(t)
	s := doc.Components.Schemas["MemoryHistory"].Value.Properties["changes"].Value.Items.Value.Properties["reason"].Value
	var enum []string
	for _, v := range s.Enum {
		enum = append(enum, v.(string))
	}
	for _, r := range memories.Reasons {
		if !slices.Contains(enum, r) {
			t.Errorf("MemoryHistory changes[].reason enum %q lacks %q, a reason the memories processor writes", enum, r)
		}
	}

	dir := filepath.Join("..", "..", "..", "processors", "memories")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		literal := func(x ast.Expr, what string) {
			if b, ok := x.(*ast.BasicLit); ok && b.Kind == token.STRING {
				t.Errorf("%s: %s is the string literal %s: use a Reason constant listed in memories.Reasons", fset.Position(b.Pos()), what, b.Value)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if !strings.HasPrefix(name.Name, "Reason") || i >= len(n.Values) {
						continue
					}
					if b, ok := n.Values[i].(*ast.BasicLit); ok && b.Kind == token.STRING {
						v, _ := strconv.Unquote(b.Value)
						if !slices.Contains(memories.Reasons, v) {
							t.Errorf("%s: memories.%s = %q is not in memories.Reasons", fset.Position(b.Pos()), name.Name, v)
						}
					}
				}
			case *ast.CompositeLit:
				// a history entry (Change); a search.FieldError's Reason
				// is a request error's, not a history reason
				if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "Change" {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Reason" {
							literal(kv.Value, "a Change's Reason")
						}
					}
				}
			case *ast.CallExpr:
				if f, ok := n.Fun.(*ast.Ident); ok && f.Name == "setConfidence" && len(n.Args) > 4 {
					literal(n.Args[4], "setConfidence's reason")
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && (id.Name == "reason" || id.Name == "why") && i < len(n.Rhs) {
						literal(n.Rhs[i], "variable "+id.Name)
					}
				}
			}
			return true
		})
	}
}
