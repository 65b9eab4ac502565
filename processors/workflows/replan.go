package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
)

// RunningDAG is a workflow's DAG (PML design: re-planning merges new nodes
// into the running DAG): the tools, their dependencies and the layers
// (recomputed at every replan), and the replans applied, oldest first.
type RunningDAG struct {
	dag.DAG
	Replans []AppliedReplan `json:"replans"`
}

// AppliedReplan is a replan_dag command a checkpoint processed: its
// requirement, the tools it added to the DAG (in the plan's order) and
// the layer of the checkpoint that applied it.
type AppliedReplan struct {
	CommandID   string   `json:"command_id"`
	Requirement string   `json:"requirement,omitempty"`
	Added       []string `json:"added"`
	Layer       int      `json:"layer"`
}

// ReplanArgs are the args of a replan_dag command as the log records
// them. Plan is computed where the command is written (POST
// /v1/workflows/{id}/commands runs the hybrid tool search and the DAG
// builder for Requirement), so the processor applies what the event says
// and never searches or reads a catalogue: a replay applies the same plan.
type ReplanArgs struct {
	// Requirement is the new requirement (the intent of the tool search).
	Requirement string `json:"requirement,omitempty"`
	// Tools are tools the caller asked for by name (no search).
	Tools []string `json:"tools,omitempty"`
	// K is how many tools the search picks (suggest.Request.K).
	K int `json:"k,omitempty"`
	// Plan is the DAG to merge; required in the event.
	Plan *ReplanPlan `json:"plan,omitempty"`
}

// ReplanPlan is a replan's result: the merged DAG (the workflow's tools
// at enqueue time plus the new ones, edges from the tools' schemas,
// layers), the tools new to the DAG, and, for a search, its picks as the
// suggestion answered them (kept for the audit; the processor ignores
// them).
type ReplanPlan struct {
	DAG    dag.DAG         `json:"dag"`
	Added  []string        `json:"added"`
	Search json.RawMessage `json:"search,omitempty"`
}

// ErrReplan is wrapped by the rejection of a replan_dag command whose plan
// is missing or malformed, or whose merge would form a cycle.
var ErrReplan = errors.New("replan_dag")

// parseReplan decodes and checks a replan_dag command's args: a plan
// whose DAG is acyclic over its own tools and whose added tools are in
// it. Errors name the field.
func parseReplan(args json.RawMessage) (ReplanArgs, error) {
	var a ReplanArgs
	if len(args) == 0 {
		return a, fmt.Errorf("%w: %w", ErrReplan, fieldError("/data/args/plan", "required (POST /v1/workflows/{id}/commands computes it from args.requirement or args.tools)"))
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return a, fmt.Errorf("%w: %w", ErrReplan, fieldError("/data/args", "%v", err))
	}
	if a.Plan == nil {
		return a, fmt.Errorf("%w: %w", ErrReplan, fieldError("/data/args/plan", "required (POST /v1/workflows/{id}/commands computes it from args.requirement or args.tools)"))
	}
	if _, err := dag.Layer(a.Plan.DAG.Tools, a.Plan.DAG.Edges); err != nil {
		return a, fmt.Errorf("%w: %w", ErrReplan, fieldError("/data/args/plan/dag", "%v", err))
	}
	for _, t := range a.Plan.Added {
		if !slices.Contains(a.Plan.DAG.Tools, t) {
			return a, fmt.Errorf("%w: %w", ErrReplan, fieldError("/data/args/plan/added", "%q is not a tool of plan.dag", t))
		}
	}
	return a, nil
}

// applyReplan merges a processed replan's plan into the workflow's DAG:
// the tools (the DAG's, then the plan's new ones in its order), the union
// of the edges (by from → to, the first kept), and the layers recomputed
// by dag.Layer. A merge that forms a cycle is rejected with the cycle
// named (the checkpoint that processes it is dead-lettered).
func applyReplan(s *State, c Command, layer int) error {
	a, err := parseReplan(c.Args)
	if err != nil {
		return fmt.Errorf("command %q: %w", c.CommandID, err)
	}
	cur := RunningDAG{DAG: dag.DAG{Layers: [][]string{}}, Replans: []AppliedReplan{}}
	if s.DAG != nil {
		cur = *s.DAG
	}
	tools := slices.Clone(cur.Tools)
	var added []string
	for _, t := range a.Plan.DAG.Tools {
		if !slices.Contains(tools, t) {
			tools = append(tools, t)
			added = append(added, t)
		}
	}
	edges := slices.Clone(cur.Edges)
	for _, e := range a.Plan.DAG.Edges {
		if !slices.ContainsFunc(edges, func(x dag.Edge) bool { return x.From == e.From && x.To == e.To }) {
			edges = append(edges, e)
		}
	}
	merged, err := dag.Layer(tools, edges)
	var ce *dag.CycleError
	switch {
	case errors.As(err, &ce):
		return fieldError("/data/processed_commands", "command %q: %w: merging the plan forms a cycle: %s", c.CommandID, ErrReplan, strings.Join(ce.Cycle, " → "))
	case err != nil:
		return fieldError("/data/processed_commands", "command %q: %w: %v", c.CommandID, ErrReplan, err)
	}
	if added == nil {
		added = []string{}
	}
	cur.DAG = merged
	cur.Replans = append(slices.Clone(cur.Replans), AppliedReplan{CommandID: c.CommandID, Requirement: a.Requirement, Added: added, Layer: layer})
	s.DAG = &cur
	return nil
}
