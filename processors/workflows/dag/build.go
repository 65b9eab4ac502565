package dag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// NameRule says when an output property name matches an input parameter
// name.
type NameRule int

const (
	// Exact: the names are equal (the design's rule).
	Exact NameRule = iota
	// ExactOrPluralID: equal, or the output is a list "<x>s" and the input
	// "<x>_id" (reservations → reservation_id). Declared before measuring;
	// chronicle eval picks between the two rules on one half of the
	// sessions and reports on the other.
	ExactOrPluralID
)

func (r NameRule) String() string {
	if r == ExactOrPluralID {
		return "exact_or_plural_id"
	}
	return "exact"
}

// Rule is how outputs are matched to inputs.
type Rule struct {
	Names NameRule
	// SkipEcho leaves out an output property named like one of the
	// tool's own input parameters: an echo of what the tool was given
	// (cancel_reservation returns the reservation_id it cancelled), not
	// something it produces. Declared with the name rules; chronicle eval
	// chooses among the combinations on the learn half.
	SkipEcho bool
}

func (r Rule) String() string {
	if r.SkipEcho {
		return r.Names.String() + "+skip_echo"
	}
	return r.Names.String()
}

// Rules are the combinations chronicle eval compares.
var Rules = []Rule{{Exact, false}, {ExactOrPluralID, false}, {Exact, true}, {ExactOrPluralID, true}}

// DefaultRule is the rule POST /v1/dags uses: the one chosen on the
// learn half of the bundled sessions (see Report; README "Workflows").
var DefaultRule = Rule{ExactOrPluralID, false}

// Match is why A → B: an output property of A (its path in A's output,
// e.g. "[].flight_number") feeding input parameter Param of B.
type Match struct {
	Output string `json:"output"`
	Param  string `json:"param"`
	// Required: the parameter is required by B's schema.
	Required bool `json:"required"`
	// Ambiguous: a type was unknown on one side (or integer met number),
	// so the design's conservative rule assumed a dependency.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// Edge is a dependency: B (To) needs something A (From) produces.
type Edge struct {
	From    string  `json:"from"`
	To      string  `json:"to"`
	Matches []Match `json:"matches"`
	// Ambiguous: every match is ambiguous.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// Dependencies returns the edges among tools under rule, sorted by (from,
// to); an edge's matches are in the order of the parameter names, then of
// the output properties. A tool never depends on itself: a tool whose
// output feeds its own input (get_reservation_details returns
// reservation_id) is a repeat call, not an order between two tasks. A tool
// without a known output schema feeds nothing. An output property can only
// feed a parameter of its own name (or, under ExactOrPluralID, an array
// "xs" a parameter "x_id"), so the parameters are indexed by name and the
// cost is O(tools · parameters + output properties · the parameters of
// their names), not tools² (10,000 tools took 26 s: a walkthrough).
func Dependencies(tools []Tool, rule Rule) []Edge {
	type param struct {
		tool  int // index in tools
		name  string
		order int // the name's position in its tool's sorted parameter names
	}
	byName := map[string][]param{}
	for j, b := range tools {
		if b.Parameters == nil {
			continue
		}
		for k, pname := range sortedKeys(b.Parameters.Properties) {
			byName[pname] = append(byName[pname], param{j, pname, k})
		}
	}
	type found struct {
		param
		op int // the output property's position
		m  Match
	}
	var out []Edge
	for _, a := range tools {
		props := outputProps(a.Output, "")
		if rule.SkipEcho && a.Parameters != nil {
			props = slices.DeleteFunc(props, func(p outProp) bool { _, echo := a.Parameters.Properties[p.name]; return echo })
		}
		var fs []found
		for i, op := range props {
			for _, n := range feedNames(op, rule) {
				for _, p := range byName[n] {
					b := tools[p.tool]
					if a.Name == b.Name || !nameMatches(op.name, op.schema, p.name, rule.Names) {
						continue
					}
					ps := b.Parameters.Properties[p.name]
					if ok, amb := compatible(op.schema, ps); ok {
						fs = append(fs, found{p, i, Match{Output: op.path, Param: p.name, Required: slices.Contains(b.Parameters.Required, p.name), Ambiguous: amb}})
					}
				}
			}
		}
		// per tool fed, in the pairwise order: parameter name, then output
		slices.SortStableFunc(fs, func(x, y found) int {
			if c := cmp.Compare(x.tool, y.tool); c != 0 {
				return c
			}
			if c := cmp.Compare(x.order, y.order); c != 0 {
				return c
			}
			return cmp.Compare(x.op, y.op)
		})
		for i := 0; i < len(fs); {
			j := i
			e := Edge{From: a.Name, To: tools[fs[i].tool].Name, Ambiguous: true}
			for ; j < len(fs) && fs[j].tool == fs[i].tool; j++ {
				e.Matches = append(e.Matches, fs[j].m)
				e.Ambiguous = e.Ambiguous && fs[j].m.Ambiguous
			}
			out = append(out, e)
			i = j
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

// Candidates is how many (output property, parameter) pairs of two
// different named tools Build(catalog, names, rule) compares: the pairs
// whose names match under rule.Names (an echo left out under
// rule.SkipEcho). Every match of the DAG's edges is one of them, so it
// bounds the edges' size before they are built, at the cost of a count:
// tools that share property names pair up as the square of their number,
// and 256 declared tools sharing 500 names made 8 million matches, an
// answer of about 500 MB (a security walkthrough). Names the catalogue
// does not have, and repeated names, are left out.
func Candidates(catalog []Tool, names []string, rule Rule) int {
	tools, _ := named(catalog, names)
	params := map[string]int{} // parameter name → how many tools take it
	for _, b := range tools {
		if b.Parameters != nil {
			for pname := range b.Parameters.Properties {
				params[pname]++
			}
		}
	}
	n := 0
	for _, a := range tools {
		for _, op := range outputProps(a.Output, "") {
			if _, echo := paramOf(a, op.name); echo && rule.SkipEcho {
				continue
			}
			for _, pn := range feedNames(op, rule) {
				n += params[pn]
				if _, own := paramOf(a, pn); own {
					n-- // a tool never feeds itself
				}
			}
		}
	}
	return n
}

// named picks the tools of catalog that names names, each once, in the
// order of names; unknown is the first name catalog does not have ("" when
// none), left out of tools.
func named(catalog []Tool, names []string) (tools []Tool, unknown string) {
	byName := map[string]Tool{}
	for _, t := range catalog {
		byName[t.Name] = t
	}
	seen := map[string]bool{}
	for _, n := range names {
		t, ok := byName[n]
		switch {
		case !ok:
			if unknown == "" {
				unknown = n
			}
		case !seen[n]:
			seen[n] = true
			tools = append(tools, t)
		}
	}
	return tools, unknown
}

// feedNames are the parameter names output property op may feed under
// rule: its own, and under ExactOrPluralID an array's "x_id" for "xs".
func feedNames(op outProp, rule Rule) []string {
	names := []string{op.name}
	if rule.Names == ExactOrPluralID && slices.Contains(types(op.schema), "array") {
		if x, ok := strings.CutSuffix(op.name, "s"); ok && x != "" {
			names = append(names, x+"_id")
		}
	}
	return names
}

// paramOf is t's parameter name, if it takes one.
func paramOf(t Tool, name string) (*jsonschema.Schema, bool) {
	if t.Parameters == nil {
		return nil, false
	}
	s, ok := t.Parameters.Properties[name]
	return s, ok
}

type outProp struct {
	name, path string
	schema     *jsonschema.Schema
}

// outputProps lists every named property of an output schema at any
// depth (array items included), with its path ("[]" for an array level).
func outputProps(s *jsonschema.Schema, path string) []outProp {
	if s == nil {
		return nil
	}
	var out []outProp
	for _, k := range sortedKeys(s.Properties) {
		p := path + "." + k
		if path == "" {
			p = k
		}
		out = append(out, outProp{name: k, path: p, schema: s.Properties[k]})
		out = append(out, outputProps(s.Properties[k], p)...)
	}
	if s.Items != nil {
		out = append(out, outputProps(s.Items, path+"[]")...)
	}
	return out
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func nameMatches(out string, os *jsonschema.Schema, in string, rule NameRule) bool {
	if out == in {
		return true
	}
	if rule == ExactOrPluralID && slices.Contains(types(os), "array") {
		if x, ok := strings.CutSuffix(out, "s"); ok && x != "" && in == x+"_id" {
			return true
		}
	}
	return false
}

// compatible says whether an output of schema out can feed an input of
// schema in: the same type; integer into number; an array's element type
// into that scalar type (a list of ids feeds one id); a scalar into an
// array of it. A side without a type (an array's elements without one
// included), or integer/number met the other way, is ambiguous and
// counted as compatible (the design's conservative rule).
func compatible(out, in *jsonschema.Schema) (ok, ambiguous bool) {
	ot, it := nonNull(types(out)), nonNull(types(in))
	if len(ot) == 0 || len(it) == 0 {
		return true, true
	}
	for _, o := range ot {
		for _, i := range it {
			switch {
			case o == i:
				if o == "array" && out.Items != nil && in.Items != nil {
					if ok, amb := compatible(out.Items, in.Items); ok {
						return true, amb
					}
					continue
				}
				return true, false
			case o == "integer" && i == "number":
				return true, false
			case o == "number" && i == "integer":
				return true, true
			case o == "array" && out.Items != nil:
				if ok, amb := compatible(out.Items, &jsonschema.Schema{Type: i}); ok {
					return true, amb
				}
			case i == "array" && in.Items != nil:
				if ok, _ := compatible(&jsonschema.Schema{Type: o}, in.Items); ok {
					return true, true
				}
			case o == "array" || i == "array":
				// an array whose elements have no type, against a scalar:
				// a side without a type, so ambiguous and compatible, as
				// an untyped property is (it was no edge at all: a
				// walkthrough's finding, "reservations": {"type": "array"}
				// feeding reservation_id)
				return true, true
			}
		}
	}
	return false, false
}

func nonNull(ts []string) []string {
	return slices.DeleteFunc(slices.Clone(ts), func(t string) bool { return t == "null" })
}

// DAG is a built workflow DAG: the dependencies and the layers, each a
// set of tools that can run in parallel once the previous layers ran.
type DAG struct {
	Tools  []string   `json:"tools"`
	Edges  []Edge     `json:"edges"`
	Layers [][]string `json:"layers"`
}

// CycleError is Build's error for tools whose dependencies form a cycle;
// Cycle names it, first tool repeated at the end (a → b → a).
type CycleError struct {
	Cycle []string
}

func (e *CycleError) Error() string {
	return "dag: the dependencies form a cycle: " + strings.Join(e.Cycle, " → ")
}

// ErrUnknownTool is wrapped by Build's error for a tool name the catalogue
// does not have.
var ErrUnknownTool = errors.New("unknown tool")

// Build builds the DAG of the named tools (each at most once) from the
// catalogue under rule: their dependencies, then gonum's topological sort
// (topo.Sort); layer(t) = 0 without dependencies, else 1 + the largest
// layer of the tools it depends on, so tools without dependencies all run
// in the first layer. A cycle is a *CycleError naming it.
func Build(catalog []Tool, names []string, rule Rule) (DAG, error) {
	tools, unknown := named(catalog, names)
	if unknown != "" {
		return DAG{}, fmt.Errorf("dag: %w %q", ErrUnknownTool, unknown)
	}
	names = names[:0:0]
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return Layer(names, Dependencies(tools, rule))
}

// Layer orders tools (distinct names) under the dependencies edges (each
// between two of the tools) with gonum's topological sort (topo.Sort):
// layer(t) = 0 without dependencies, else 1 + the largest layer of the
// tools it depends on; each layer is sorted by name. A cycle is a
// *CycleError naming it. Build uses it after computing the edges; a
// running workflow's replan uses it to merge new nodes and edges (carried
// by its command) into its DAG without the catalogue.
func Layer(tools []string, edges []Edge) (DAG, error) {
	d := DAG{Tools: append([]string{}, tools...), Edges: append([]Edge{}, edges...), Layers: [][]string{}} // [] in JSON, never null
	g := simple.NewDirectedGraph()
	id := map[string]int64{}
	for i, t := range tools {
		if _, dup := id[t]; dup {
			return DAG{}, fmt.Errorf("dag: tool %q listed twice", t)
		}
		id[t] = int64(i)
		g.AddNode(simple.Node(i))
	}
	preds := map[string][]string{}
	for _, e := range edges {
		a, okA := id[e.From]
		b, okB := id[e.To]
		if !okA || !okB || a == b {
			return DAG{}, fmt.Errorf("dag: edge %s → %s: both ends must be distinct tools of the DAG", e.From, e.To)
		}
		g.SetEdge(g.NewEdge(simple.Node(a), simple.Node(b)))
		preds[e.To] = append(preds[e.To], e.From)
	}
	order, err := topo.Sort(g)
	if err != nil {
		var u topo.Unorderable
		if errors.As(err, &u) && len(u) > 0 {
			return DAG{}, &CycleError{Cycle: cycleIn(g, u[0], tools)}
		}
		return DAG{}, err
	}
	layer := map[string]int{}
	for _, n := range order {
		name := tools[n.ID()]
		l := 0
		for _, p := range preds[name] {
			l = max(l, layer[p]+1)
		}
		layer[name] = l
		for len(d.Layers) <= l {
			d.Layers = append(d.Layers, nil)
		}
		d.Layers[l] = append(d.Layers[l], name)
	}
	for _, l := range d.Layers {
		sort.Strings(l)
	}
	return d, nil
}

// cycleIn finds one cycle inside a strongly connected component by a
// depth-first walk from its lowest-id node.
func cycleIn(g *simple.DirectedGraph, scc []graph.Node, tools []string) []string {
	in := map[int64]bool{}
	for _, n := range scc {
		in[n.ID()] = true
	}
	start := scc[0].ID()
	for _, n := range scc {
		start = min(start, n.ID())
	}
	var path []int64
	onPath := map[int64]bool{}
	var walk func(v int64) bool
	walk = func(v int64) bool {
		path = append(path, v)
		onPath[v] = true
		succ := graph.NodesOf(g.From(v))
		slices.SortFunc(succ, func(a, b graph.Node) int { return int(a.ID() - b.ID()) })
		for _, w := range succ {
			if w.ID() == start {
				path = append(path, start)
				return true
			}
			if in[w.ID()] && !onPath[w.ID()] && walk(w.ID()) {
				return true
			}
		}
		path = path[:len(path)-1]
		onPath[v] = false
		return false
	}
	walk(start)
	out := make([]string, len(path))
	for i, v := range path {
		out[i] = tools[v]
	}
	return out
}
