package treesearch

import (
	"context"
	"errors"
)

// BreadthFirstResult is what the plain breadth-first baseline did.
type BreadthFirstResult struct {
	Solved       bool
	Expansions   int // nodes expanded (proposer calls)
	Nodes        int // candidates generated
	Duplicates   int
	Unexpandable int // nodes the proposer had nothing for
}

// BreadthFirst is the baseline Beam-A* is measured against: plain
// breadth-first search on the same proposer, the same dedup (closed set of
// state digests) and the same objective checks, no evaluator and no beam.
// It expands level by level in generation order and stops when a
// candidate passes the checks and isGoal holds for it. It runs in memory:
// it writes no events.
func BreadthFirst(ctx context.Context, goal, rootState string, maxDepth, k int, p Proposer, e Evaluator, isGoal func(Candidate) bool) (BreadthFirstResult, error) {
	var res BreadthFirstResult
	tk, err := CL100K()
	if err != nil {
		return res, err
	}
	type item struct{ path []Step }
	closed := map[string]bool{Digest(rootState): true}
	queue := []item{{path: []Step{{NodeID: RootID, State: rootState}}}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		last := it.path[len(it.path)-1]
		if last.Depth >= maxDepth {
			continue
		}
		res.Expansions++
		prop, err := p.Propose(ctx, ProposeRequest{Goal: goal, Prompt: Prompt(tk, goal, it.path), Path: it.path, K: k})
		if errors.Is(err, ErrUnknownState) {
			res.Unexpandable++
			continue
		}
		if err != nil {
			return res, err
		}
		cands := prop.Candidates
		if len(cands) > k {
			cands = cands[:k]
		}
		for i, c := range cands {
			res.Nodes++
			d := Digest(c.State)
			if closed[d] {
				res.Duplicates++
				continue
			}
			closed[d] = true
			if reason, _ := e.Check(EvalRequest{Goal: goal, Prompt: Prompt(tk, goal, it.path), Path: it.path, Candidate: c}); reason != "" {
				continue
			}
			if isGoal(c) {
				res.Solved = true
				return res, nil
			}
			step := Step{NodeID: ChildID(last.NodeID, i), Depth: last.Depth + 1, Candidate: c.Text, State: c.State}
			queue = append(queue, item{path: append(append([]Step{}, it.path...), step)})
		}
	}
	return res, nil
}
