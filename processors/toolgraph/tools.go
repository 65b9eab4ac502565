package toolgraph

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
)

// ToolInfo is one tool's node in the graph.
type ToolInfo struct {
	// Tool is the tool id.
	Tool string `json:"tool"`
	// Calls is the number of observed calls of the tool.
	Calls int `json:"calls"`
	// Starts is the number of workflows that began with it.
	Starts int `json:"starts"`
	// TransitionsIn and TransitionsOut count observed transitions into and
	// out of the tool (count(·→tool), count(tool→·)), repeats included.
	TransitionsIn  int `json:"transitions_in"`
	TransitionsOut int `json:"transitions_out"`
	// InDegree and OutDegree are the numbers of distinct other tools with
	// an edge to / from it (self-loops not counted; see SelfLoop).
	InDegree  int `json:"in_degree"`
	OutDegree int `json:"out_degree"`
	// SelfLoop says the tool was called twice in a row.
	SelfLoop bool `json:"self_loop"`
	// PageRank is the weighted PageRank; all tools sum to 1.
	PageRank float64 `json:"pagerank"`
	// Community is the Louvain community, numbered from 0 in the order of
	// each community's alphabetically first tool.
	Community int `json:"community"`
}

// Tools returns every tool with its counts, PageRank, community and
// degrees, by decreasing PageRank, ties by tool name.
func (g *Graph) Tools() []ToolInfo {
	a := g.analysis()
	out := make([]ToolInfo, 0, len(a.tools))
	for _, v := range a.byPR {
		r := g.nodes[a.tools[v]]
		outDeg := len(a.succ[v])
		if a.selfs[v] {
			outDeg--
		}
		out = append(out, ToolInfo{
			Tool: a.tools[v], Calls: r.Calls, Starts: r.Starts,
			TransitionsIn: r.In, TransitionsOut: r.Out,
			InDegree: len(a.pred[v]), OutDegree: outDeg, SelfLoop: a.selfs[v],
			PageRank: a.pr[v], Community: a.comm[v],
		})
	}
	return out
}

// Communities is the number of Louvain communities.
func (g *Graph) Communities() int { return g.analysis().ncomm }

// ErrUnknownTool is returned (wrapped, naming the tool) by Path for a tool
// the graph has never seen.
var ErrUnknownTool = errors.New("toolgraph: unknown tool")

// ErrNoPath is returned (wrapped) by Path when the target cannot be
// reached from the source along observed edges.
var ErrNoPath = errors.New("toolgraph: no path")

// Route is a path between two tools along learned edges.
type Route struct {
	// From and To are the endpoints.
	From string `json:"from"`
	To   string `json:"to"`
	// Tools are the tools on the path, From first and To last.
	Tools []string `json:"tools"`
	// Edges are the path's edges in order (len(Tools) − 1 of them).
	Edges []Edge `json:"edges"`
	// Hops is len(Edges).
	Hops int `json:"hops"`
	// Cost is Σ −ln(edge weight) along the path, ≥ 0.
	Cost float64 `json:"cost"`
	// Likelihood is exp(−Cost), the product of the edge weights.
	Likelihood float64 `json:"likelihood"`
}

// Path returns the cheapest path from one tool to another over the learned
// edges (self-loops ignored), found with gonum's path.DijkstraFromTo.
// The cost of an edge is −ln(weight) with weight = type weight × source
// weight × confidence (GraphRAG design), so the cheapest path is the one
// whose product of edge weights is largest: the most likely chain of
// transitions under the learned model. 1/weight was the alternative; it
// does not compose along a path (two edges of weight 0.5 would cost as
// much as one of 0.25, while the chain is as likely as that edge only
// under −ln). Hop count would ignore what was learned. Equal-cost paths
// are resolved deterministically (nodes are visited in sorted tool order).
// from == to gives a route of zero hops. Errors: ErrUnknownTool,
// ErrNoPath, both wrapped with the tool names.
func (g *Graph) Path(from, to string) (Route, error) {
	a := g.analysis()
	u, ok := a.idx[from]
	if !ok {
		return Route{}, fmt.Errorf("%w %q", ErrUnknownTool, from)
	}
	v, ok := a.idx[to]
	if !ok {
		return Route{}, fmt.Errorf("%w %q", ErrUnknownTool, to)
	}
	r := Route{From: from, To: to, Tools: []string{from}, Edges: []Edge{}, Likelihood: 1}
	if u == v {
		return r, nil
	}
	nodes, cost := path.DijkstraFromTo(simple.Node(u), simple.Node(v), gview{a: a, cost: true})
	if len(nodes) == 0 || math.IsInf(cost, 1) {
		return Route{}, fmt.Errorf("%w from %q to %q", ErrNoPath, from, to)
	}
	r.Tools = r.Tools[:0]
	for i, n := range nodes {
		r.Tools = append(r.Tools, a.tools[n.ID()])
		if i > 0 {
			e, _ := g.EdgeBetween(a.tools[nodes[i-1].ID()], a.tools[n.ID()])
			r.Edges = append(r.Edges, e)
		}
	}
	r.Hops, r.Cost, r.Likelihood = len(r.Edges), cost, math.Exp(-cost)
	return r, nil
}

// Profile is what the graph knows of one tool without ranking it: its
// counts and its most frequent neighbours. The search index describes
// tools with it (the Tool collection).
type Profile struct {
	Tool   string `json:"tool"`
	Calls  int    `json:"calls"`
	Starts int    `json:"starts"`
	// Before are the tools most often called right before it, After those
	// most often called right after it (self-loops left out), by
	// decreasing count, ties by name.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// Profiles returns every tool's Profile with at most k neighbours each
// way, in tool order. One pass over the edges: O(E log E), no PageRank.
func (g *Graph) Profiles(k int) []Profile {
	type nb struct {
		tool  string
		count int
	}
	before, after := map[string][]nb{}, map[string][]nb{}
	for _, r := range g.edges {
		if r.From == r.To {
			continue
		}
		after[r.From] = append(after[r.From], nb{r.To, r.Count})
		before[r.To] = append(before[r.To], nb{r.From, r.Count})
	}
	top := func(l []nb) []string {
		sort.Slice(l, func(i, j int) bool {
			if l[i].count != l[j].count {
				return l[i].count > l[j].count
			}
			return l[i].tool < l[j].tool
		})
		var out []string
		for _, n := range l[:min(k, len(l))] {
			out = append(out, n.tool)
		}
		return out
	}
	out := make([]Profile, 0, len(g.nodes))
	for tool, r := range g.nodes {
		out = append(out, Profile{Tool: tool, Calls: r.Calls, Starts: r.Starts, Before: top(before[tool]), After: top(after[tool])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// ToolOfKey is the tool id of a row key of the projection ("" when the
// key is not a tool's node row): the commit hook of the search index uses
// it to follow tool changes (every call, and every transition into or out
// of a tool, rewrites its node row). Node rows are per scope
// (n/<scope>/<tool>); the Tool collection holds the union of every scope
// (search.ToolScope), so the scope is dropped.
func ToolOfKey(key string) string {
	rest, ok := strings.CutPrefix(key, "n/")
	if !ok {
		return ""
	}
	_, esc, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	tool, err := url.PathUnescape(esc)
	if err != nil {
		return ""
	}
	return tool
}
