package passes

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/chronicle-dev/chronicle/events"
)

// Refinement limits of the multi-pass reasoning design (phase B).
const (
	// MaxNesting is the deepest sub-plan level: a top-level step is level
	// 1, its sub-steps level 2, … up to 5.
	MaxNesting = 5
	// MaxAttemptsPerFragment bounds the refinement attempts of one pass
	// on one fragment (the sub-plan a step belongs to: its parent).
	MaxAttemptsPerFragment = 3
	// MaxAttemptsPerPass bounds the refinement attempts of one pass.
	MaxAttemptsPerPass = 10
)

// Step is a plan step as the projection keeps it: its id, parent, the
// level it is nested at (1 = top level) and its 1-based position.
type Step struct {
	ID              string   `json:"step_id"`
	ParentID        string   `json:"parent_id,omitempty"`
	Level           int      `json:"level"`
	StepIndex       int      `json:"step_index"`
	TotalSteps      int      `json:"total_steps"`
	Description     string   `json:"description"`
	IncomingContext string   `json:"incoming_context,omitempty"`
	HandoffToNext   string   `json:"handoff_to_next,omitempty"`
	DependsOn       []string `json:"depends_on,omitempty"`
}

// Plan is the plan as it stands: steps in plan order (a step's sub-steps
// follow it, depth first).
type Plan struct {
	Steps []Step `json:"steps"`
}

// RejectError is a pass the reducer refuses: Pointer names the field
// (JSON pointer into the event, e.g. /data/refinement_actions/2/target).
// The processor returns it from Apply, so the event is dead-lettered with
// the reason.
type RejectError struct {
	Pointer, Reason string
}

func (e *RejectError) Error() string { return e.Pointer + ": " + e.Reason }

// MemberPointer implements processors.PointerError: the dead letter of a
// refused pass keeps the pointer (GET /v1/deadletters' pointer), as the
// other processors' letters do (they had none: a walkthrough, 2026-11-30).
func (e *RejectError) MemberPointer() string { return e.Pointer }

func reject(ptr, format string, a ...any) error {
	return &RejectError{Pointer: ptr, Reason: fmt.Sprintf(format, a...)}
}

// FromSnapshot builds a Plan from a plan snapshot of an event. A step
// without step_id gets "step-<n>" (its 1-based position); a parent must
// come before its children; depends_on entries must name steps and form
// no cycle. Errors name the field.
func FromSnapshot(p *events.Plan) (Plan, error) {
	var out Plan
	for i, s := range p.Steps {
		ptr := fmt.Sprintf("/data/plan/steps/%d", i)
		id := s.StepID
		if id == "" {
			id = fmt.Sprintf("step-%d", i+1)
		}
		if out.index(id) >= 0 {
			return Plan{}, reject(ptr+"/step_id", "duplicate step id %q", id)
		}
		st := Step{ID: id, ParentID: s.ParentID, Description: s.Description, IncomingContext: s.IncomingContext, HandoffToNext: s.HandoffToNext, DependsOn: s.DependsOn}
		// what "unknown parent step id" meant in these two cases (both
		// said only that: a walkthrough, 2026-11-30)
		if s.ParentID == id {
			return Plan{}, reject(ptr+"/parent_id", "step %q names itself as its parent", id)
		}
		if s.ParentID != "" && out.index(s.ParentID) < 0 && slices.ContainsFunc(p.Steps[i+1:], func(l events.PlanStep) bool { return l.StepID == s.ParentID }) {
			return Plan{}, reject(ptr+"/parent_id", "parent step id %q comes after this step: a plan lists a parent before its sub-steps", s.ParentID)
		}
		if err := out.insert(st, ptr+"/parent_id"); err != nil {
			return Plan{}, err
		}
	}
	for i, st := range p.Steps {
		for j, d := range st.DependsOn {
			if out.index(d) < 0 {
				return Plan{}, reject(fmt.Sprintf("/data/plan/steps/%d/depends_on/%d", i, j), "unknown step id %q", d)
			}
		}
	}
	if c := out.dependencyCycle(); c != nil {
		i := slices.IndexFunc(p.Steps, func(s events.PlanStep) bool { return s.StepID == c[0] })
		if i < 0 { // a step named by its position
			fmt.Sscanf(c[0], "step-%d", &i)
			i--
		}
		return Plan{}, reject(fmt.Sprintf("/data/plan/steps/%d/depends_on", i), "%s", cycleReason(c))
	}
	out.renumber()
	return out, nil
}

// dependencyCycle returns the ids of steps of p whose depends_on entries
// form a cycle, in plan order (one step depending on itself, or the
// steps of a strongly connected set, which gonum's topological sort
// reports), nil if they form none: such a plan has no order in which
// its steps could run. Entries naming no step are left to the callers.
func (p *Plan) dependencyCycle() []string {
	g := simple.NewDirectedGraph()
	for i := range p.Steps {
		g.AddNode(simple.Node(i))
	}
	for i, st := range p.Steps {
		for _, d := range st.DependsOn {
			j := p.index(d)
			switch {
			case j == i:
				return []string{st.ID}
			case j >= 0:
				g.SetEdge(g.NewEdge(simple.Node(j), simple.Node(i)))
			}
		}
	}
	_, err := topo.Sort(g)
	var u topo.Unorderable
	if !errors.As(err, &u) || len(u) == 0 {
		return nil
	}
	idx := make([]int, 0, len(u[0]))
	for _, n := range u[0] {
		idx = append(idx, int(n.ID()))
	}
	slices.Sort(idx)
	ids := make([]string, len(idx))
	for k, i := range idx {
		ids[k] = p.Steps[i].ID
	}
	return ids
}

func cycleReason(c []string) string {
	if len(c) == 1 {
		return fmt.Sprintf("step %q depends on itself: no order could run it", c[0])
	}
	return fmt.Sprintf("steps %q depend on each other in a cycle: no order could run them", strings.Join(c, ", "))
}

// Refine applies a pass's refinement actions to p (a deterministic
// reducer): ADD inserts a new step id as the last sub-step of
// changes.parent_id (top level when absent), MODIFY changes the fields
// changes carries, REMOVE deletes the step with its sub-plan. Rejected:
// an ADD of an existing id, a MODIFY or REMOVE (or a parent, or a
// depends_on entry) naming an unknown step id, depends_on entries that
// form a cycle (a step depending on itself included), a REMOVE that
// leaves a dependency dangling, nesting deeper than MaxNesting, a MODIFY moving a step
// under itself, more than MaxAttemptsPerFragment attempts on one fragment
// or MaxAttemptsPerPass in the pass. p is not changed on error.
func Refine(p Plan, actions []events.RefinementAction) (Plan, error) {
	out := Plan{Steps: slices.Clone(p.Steps)}
	perFragment := map[string]map[int]bool{}
	attempts := map[int]bool{}
	for i, a := range actions {
		ptr := fmt.Sprintf("/data/refinement_actions/%d", i)
		attempt := a.Attempt
		if attempt == 0 {
			attempt = -(i + 1) // its own attempt
		}
		var ch events.StepChanges
		if a.Changes != nil {
			ch = *a.Changes
		}
		var fragment string
		switch a.Type {
		case events.RefineAdd:
			if out.index(a.Target) >= 0 {
				return p, reject(ptr+"/target", "ADD of step id %q, which the plan already has", a.Target)
			}
			st := Step{ID: a.Target, DependsOn: ch.DependsOn}
			if ch.ParentID != nil {
				st.ParentID = *ch.ParentID
			}
			if ch.Description != nil {
				st.Description = *ch.Description
			}
			if ch.IncomingContext != nil {
				st.IncomingContext = *ch.IncomingContext
			}
			if ch.HandoffToNext != nil {
				st.HandoffToNext = *ch.HandoffToNext
			}
			fragment = st.ParentID
			if err := out.insert(st, ptr+"/changes/parent_id"); err != nil {
				return p, err
			}
		case events.RefineModify:
			j := out.index(a.Target)
			if j < 0 {
				return p, reject(ptr+"/target", "MODIFY of unknown step id %q", a.Target)
			}
			st := out.Steps[j]
			fragment = st.ParentID
			if ch.Description != nil {
				st.Description = *ch.Description
			}
			if ch.IncomingContext != nil {
				st.IncomingContext = *ch.IncomingContext
			}
			if ch.HandoffToNext != nil {
				st.HandoffToNext = *ch.HandoffToNext
			}
			if ch.DependsOn != nil {
				st.DependsOn = ch.DependsOn
			}
			if ch.ParentID != nil && *ch.ParentID != st.ParentID {
				// a move: take the sub-plan out, put it back under the new parent
				sub := out.subtree(j)
				if slices.ContainsFunc(sub, func(s Step) bool { return s.ID == *ch.ParentID }) {
					return p, reject(ptr+"/changes/parent_id", "step %q cannot move under itself or its own sub-step %q", a.Target, *ch.ParentID)
				}
				out.Steps = slices.Delete(out.Steps, j, j+len(sub))
				st.ParentID = *ch.ParentID
				sub[0] = st
				if err := out.insertTree(sub, ptr+"/changes/parent_id"); err != nil {
					return p, err
				}
			} else {
				out.Steps[j] = st
			}
		case events.RefineRemove:
			j := out.index(a.Target)
			if j < 0 {
				return p, reject(ptr+"/target", "REMOVE of unknown step id %q", a.Target)
			}
			fragment = out.Steps[j].ParentID
			out.Steps = slices.Delete(out.Steps, j, j+len(out.subtree(j)))
		default:
			return p, reject(ptr+"/type", "unknown refinement type %q (ADD, MODIFY or REMOVE)", a.Type)
		}
		if a.Type != events.RefineRemove {
			for j, d := range ch.DependsOn {
				if out.index(d) < 0 {
					return p, reject(fmt.Sprintf("%s/changes/depends_on/%d", ptr, j), "unknown step id %q", d)
				}
			}
			if ch.DependsOn != nil {
				if c := out.dependencyCycle(); c != nil {
					return p, reject(ptr+"/changes/depends_on", "%s", cycleReason(c))
				}
			}
		} else {
			for _, st := range out.Steps {
				for _, d := range st.DependsOn {
					if out.index(d) < 0 {
						return p, reject(ptr+"/target", "REMOVE of %q leaves step %q depending on the removed step %q", a.Target, st.ID, d)
					}
				}
			}
		}
		if perFragment[fragment] == nil {
			perFragment[fragment] = map[int]bool{}
		}
		perFragment[fragment][attempt] = true
		attempts[attempt] = true
		if n := len(perFragment[fragment]); n > MaxAttemptsPerFragment {
			name := fragment
			if name == "" {
				name = "(top level)"
			}
			return p, reject(ptr, "refinement attempt %d on fragment %s exceeds %d attempts per fragment", n, name, MaxAttemptsPerFragment)
		}
		if len(attempts) > MaxAttemptsPerPass {
			return p, reject(ptr, "refinement attempt %d exceeds %d attempts per pass", len(attempts), MaxAttemptsPerPass)
		}
	}
	out.renumber()
	return out, nil
}

func (p *Plan) index(id string) int {
	return slices.IndexFunc(p.Steps, func(s Step) bool { return s.ID == id })
}

// subtree returns the step at j and its sub-steps (they follow it).
func (p *Plan) subtree(j int) []Step {
	lvl := p.Steps[j].Level
	k := j + 1
	for k < len(p.Steps) && p.Steps[k].Level > lvl {
		k++
	}
	return slices.Clone(p.Steps[j:k])
}

// insert puts st as the last sub-step of its parent (or at the end).
func (p *Plan) insert(st Step, parentPtr string) error {
	return p.insertTree([]Step{st}, parentPtr)
}

// insertTree puts a step with its sub-plan (tree[0] is the root, levels
// relative to it are kept) as the last sub-plan of tree[0].ParentID.
func (p *Plan) insertTree(tree []Step, parentPtr string) error {
	root := tree[0]
	at, lvl := len(p.Steps), 1
	if root.ParentID != "" {
		j := p.index(root.ParentID)
		if j < 0 {
			return reject(parentPtr, "unknown parent step id %q", root.ParentID)
		}
		lvl = p.Steps[j].Level + 1
		at = j + len(p.subtree(j))
	}
	shift := lvl - root.Level
	if root.Level == 0 {
		shift = lvl
	}
	tree = slices.Clone(tree)
	deepest := 0
	for i := range tree {
		if i == 0 {
			tree[i].Level = lvl
		} else {
			tree[i].Level += shift
		}
		deepest = max(deepest, tree[i].Level)
	}
	if deepest > MaxNesting {
		return reject(parentPtr, "step %q would nest at level %d, deeper than %d", root.ID, deepest, MaxNesting)
	}
	p.Steps = slices.Insert(p.Steps, at, tree...)
	return nil
}

// renumber sets every step's 1-based StepIndex and TotalSteps.
func (p *Plan) renumber() {
	for i := range p.Steps {
		p.Steps[i].StepIndex, p.Steps[i].TotalSteps = i+1, len(p.Steps)
	}
}
