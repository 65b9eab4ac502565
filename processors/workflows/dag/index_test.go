package dag

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// pairwiseDependencies is Dependencies as it was before the parameters
// were indexed by name: every pair of tools, every parameter of one with
// every output property of the other. The reference the index must equal.
func pairwiseDependencies(tools []Tool, rule Rule) []Edge {
	var out []Edge
	for _, a := range tools {
		props := outputProps(a.Output, "")
		if rule.SkipEcho && a.Parameters != nil {
			props = slices.DeleteFunc(props, func(p outProp) bool { _, echo := a.Parameters.Properties[p.name]; return echo })
		}
		for _, b := range tools {
			if a.Name == b.Name || b.Parameters == nil {
				continue
			}
			var ms []Match
			for _, pname := range sortedKeys(b.Parameters.Properties) {
				ps := b.Parameters.Properties[pname]
				for _, op := range props {
					if !nameMatches(op.name, op.schema, pname, rule.Names) {
						continue
					}
					if ok, amb := compatible(op.schema, ps); ok {
						ms = append(ms, Match{Output: op.path, Param: pname, Required: slices.Contains(b.Parameters.Required, pname), Ambiguous: amb})
					}
				}
			}
			if len(ms) > 0 {
				e := Edge{From: a.Name, To: b.Name, Matches: ms, Ambiguous: true}
				for _, m := range ms {
					e.Ambiguous = e.Ambiguous && m.Ambiguous
				}
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// randomCatalog is n tools whose parameters and outputs draw names from a
// small vocabulary (ids, plurals, nested objects and arrays of each type),
// so that many pairs match, some ambiguously.
func randomCatalog(r *rand.Rand, n int) []Tool {
	names := []string{"user_id", "users", "user", "order_id", "orders", "flight", "flights", "flight_id", "date", "amount", "reservation_id", "reservations", "payment_id"}
	typ := func() *jsonschema.Schema {
		switch r.IntN(6) {
		case 0:
			return &jsonschema.Schema{Type: "string"}
		case 1:
			return &jsonschema.Schema{Type: "integer"}
		case 2:
			return &jsonschema.Schema{Type: "number"}
		case 3:
			return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: []string{"string", "integer"}[r.IntN(2)]}}
		case 4:
			return &jsonschema.Schema{}
		}
		return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{names[r.IntN(len(names))]: {Type: "string"}}}
	}
	obj := func() *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
		for range r.IntN(4) {
			nm := names[r.IntN(len(names))]
			s.Properties[nm] = typ()
			if r.IntN(2) == 0 {
				s.Required = append(s.Required, nm)
			}
		}
		return s
	}
	tools := make([]Tool, n)
	for i := range tools {
		tools[i] = Tool{Name: fmt.Sprintf("tool_%03d", r.IntN(10*n))}
		if r.IntN(5) > 0 {
			tools[i].Parameters = obj()
		}
		if r.IntN(5) > 0 {
			tools[i].Output = obj()
			if r.IntN(3) == 0 {
				tools[i].Output = &jsonschema.Schema{Type: "array", Items: obj()}
			}
		}
	}
	return tools
}

// Dependencies over the index equals the pairwise reference on the
// airline catalogue and on 200 random catalogues, under every rule.
func TestDependenciesIndexEqualsPairwise(t *testing.T) {
	cat, err := AirlineCatalog()
	if err != nil {
		t.Fatal(err)
	}
	catalogs := [][]Tool{cat}
	r := rand.New(rand.NewPCG(11, 30))
	for range 200 {
		catalogs = append(catalogs, randomCatalog(r, 2+r.IntN(25)))
	}
	edges := 0
	for i, tools := range catalogs {
		for _, rule := range Rules {
			got, want := Dependencies(tools, rule), pairwiseDependencies(tools, rule)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("catalogue %d, rule %+v:\n got %+v\nwant %+v", i, rule, got, want)
			}
			edges += len(want)
		}
	}
	if edges < 1000 {
		t.Fatalf("only %d edges over all catalogues: the comparison says little", edges)
	}
	t.Logf("%d edges compared", edges)
}

// chainCatalog is the walkthrough's shape: tool i takes k<i> and returns
// k<i+1>, so each feeds the next.
func chainCatalog(n int) []Tool {
	tools := make([]Tool, n)
	for i := range tools {
		tools[i] = Tool{Name: fmt.Sprintf("t%d", i),
			Parameters: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{fmt.Sprintf("k%d", i): {Type: "string"}}},
			Output:     &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{fmt.Sprintf("k%d", i+1): {Type: "string"}}}}
	}
	return tools
}

// BenchmarkDependencies: the index against the pairwise reference on a
// chain of 2,000 tools (go test -bench Dependencies ./processors/workflows/dag/).
func BenchmarkDependencies(b *testing.B) {
	tools := chainCatalog(2000)
	for _, c := range []struct {
		name string
		f    func([]Tool, Rule) []Edge
	}{{"index", Dependencies}, {"pairwise", pairwiseDependencies}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if len(c.f(tools, DefaultRule)) != 1999 {
					b.Fatal("the chain has 1,999 edges")
				}
			}
		})
	}
}
