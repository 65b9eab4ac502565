package suggest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
)

// Replan computes the plan of a replan_dag command (PML design:
// re-planning queries the knowledge graph for new tools and merges new
// nodes into the running DAG) when the command is written, so the log
// records the tool choice and the workflows processor only applies it.
//
// current are the running DAG's tools. With args.Tools the new tools are
// those named (no search); otherwise args.Requirement is the intent of a
// hybrid tool search (Suggest, context = current, K = args.K) and the new
// tools are its picks. The DAG builder then builds current ∪ new from the
// schemas (dag.DefaultRule). Errors: ErrInvalid naming the field (no
// requirement nor tools, both, an unknown tool, a plan given by the
// caller, nothing new to add), a *dag.CycleError naming the cycle.
func (s *Suggester) Replan(ctx context.Context, current []string, args workflows.ReplanArgs) (workflows.ReplanPlan, error) {
	var plan workflows.ReplanPlan
	switch {
	case args.Plan != nil:
		return plan, fieldErr("computed by the server from args.requirement or args.tools, not given", "args", "plan")
	case len(args.Tools) > 0 && strings.TrimSpace(args.Requirement) != "":
		return plan, fieldErr("give args.requirement (a tool search) or args.tools (named tools), not both", "args")
	case len(args.Tools) == 0 && strings.TrimSpace(args.Requirement) == "":
		return plan, fieldErr("required for replan_dag (or args.tools)", "args", "requirement")
	}
	var added []string
	if len(args.Tools) > 0 {
		known := s.candidates()
		for i, t := range args.Tools {
			if !slices.Contains(known, t) {
				return plan, fieldErr(fmt.Sprintf("%q is not a tool of the catalogue or the tool graph", t), "args", "tools", i)
			}
			if !slices.Contains(current, t) && !slices.Contains(added, t) {
				added = append(added, t)
			}
		}
	} else {
		sg, err := s.Suggest(ctx, Request{Intent: args.Requirement, ContextTools: current, K: args.K})
		var fe *FieldError
		if errors.As(err, &fe) { // the search's request is the command's args
			return plan, fe.Under("args")
		}
		if err != nil {
			return plan, err
		}
		for _, p := range sg.Tools {
			added = append(added, p.Tool)
		}
		if plan.Search, err = json.Marshal(struct {
			Tools       []Pick   `json:"tools"`
			Confidence  float64  `json:"confidence"`
			Explanation []string `json:"explanation"`
		}{sg.Tools, sg.Confidence, sg.Explanation}); err != nil {
			return plan, err
		}
	}
	if len(added) == 0 {
		return plan, fieldErr("nothing to add, every tool found is already in the DAG", "args")
	}
	all := append(slices.Clone(current), added...)
	d, err := dag.Build(s.withUnknown(all), all, dag.DefaultRule)
	var ce *dag.CycleError
	switch {
	case errors.As(err, &ce):
		return plan, err
	case err != nil:
		return plan, fmt.Errorf("suggest: replan: %w", err)
	}
	plan.DAG, plan.Added = d, added
	return plan, nil
}
