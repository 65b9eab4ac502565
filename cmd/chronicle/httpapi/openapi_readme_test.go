package httpapi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// readmeRoute is a route row of README.md's tables: "| `GET /v1/x?a=&b=[&c=]` |".
var readmeRoute = regexp.MustCompile("(?m)^\\| `(GET|POST|PUT|PATCH|DELETE|HEAD) ([^` ]+)`")

// readmeQueryName is a query parameter of a README route: ?name=, &name=, [&name=].
var readmeQueryName = regexp.MustCompile(`(?:^|[?&\[])([a-z_]+)=`)

// TestOpenAPIDeclaresREADMEQueryParameters: every query parameter a
// README route row names (`POST /v1/workflows/suggest?scope=`) is a
// parameter of that operation in openapi.json. Before, the suggest
// route's ?scope= (a policy's scope; ?scope=bogus is a 400) was missing
// from the description, which accepted any value of it.
func TestOpenAPIDeclaresREADMEQueryParameters(t *testing.T) {
	doc := loadOpenAPI(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]*openapi3.Operation{}
	items := map[string]*openapi3.PathItem{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			k := method + " " + pathParam.ReplaceAllString(path, "{}")
			ops[k], items[k] = op, item
		}
	}
	rows := 0
	for _, m := range readmeRoute.FindAllStringSubmatch(string(readme), -1) {
		method, target := m[1], m[2]
		if strings.Contains(target, `\|`) { // a row of alternatives: /v1/workflows/{id}/updates\|checkpoints...
			continue
		}
		path, query, _ := strings.Cut(target, "?")
		path = strings.TrimSuffix(path, "[")
		k := method + " " + pathParam.ReplaceAllString(path, "{}")
		op := ops[k]
		if op == nil {
			t.Errorf("README.md: %s %s: no such operation in openapi.json", method, path)
			continue
		}
		rows++
		declared := map[string]bool{}
		for _, ps := range []openapi3.Parameters{items[k].Parameters, op.Parameters} {
			for _, p := range ps {
				if p.Value != nil && p.Value.In == "query" {
					declared[p.Value.Name] = true
				}
			}
		}
		for _, q := range readmeQueryName.FindAllStringSubmatch(query, -1) {
			if !declared[q[1]] {
				t.Errorf("README.md documents %s %s?%s= but openapi.json declares no query parameter %q for it", method, path, q[1], q[1])
			}
		}
	}
	if rows < 20 {
		t.Errorf("only %d README route rows matched: is the table's format changed?", rows)
	}
}
