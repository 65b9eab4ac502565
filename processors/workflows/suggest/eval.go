package suggest

import (
	"context"
	"slices"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Report measures suggestions on tau-bench sessions, leave-one-task-out:
// for each session, the tool graph is learned from the sessions of every
// other task (dag outputs from every reply: they describe the tools, not
// the task), and Suggest is asked with the task's instruction as intent,
// the session's first tool call as context and K tools. A session's used
// tools are the distinct tools it called after the first call. Sessions
// with fewer than 2 calls are left out.
type Report struct {
	Sessions int `json:"sessions"`
	K        int `json:"k"`
	// Variant is "hybrid" (local alpha), "semantic_only" (alpha 1) or
	// "graph_only" (alpha 0).
	Variant string `json:"variant"`
	// ByMode: per mode, how many suggestions, the mean share of the
	// session's used tools the suggestion contains (recall), the mean
	// share of suggested tools the session used (precision), and how
	// many suggestions contain every used tool.
	ByMode map[string]ModeScore `json:"by_mode"`
	All    ModeScore            `json:"all"`
	// SpeculativeWrites counts speculative suggestions with a writing
	// tool: must be 0.
	SpeculativeWrites int `json:"speculative_writes"`
}

// ModeScore is the quality of the suggestions of one mode.
type ModeScore struct {
	Suggestions int     `json:"suggestions"`
	Recall      float64 `json:"recall"`
	Precision   float64 `json:"precision"`
	AllUsed     int     `json:"contain_every_used_tool"`
}

// Evaluate computes the Report of the hybrid with K = 1 and K = 3, and of
// semantic-only and graph-only with K = 3.
func Evaluate(ctx context.Context, recs []taubench.Record, emb embedder.Embedder) ([]Report, error) {
	tools, err := dag.AirlineCatalog()
	if err != nil {
		return nil, err
	}
	envs := make([][]events.Envelope, len(recs))
	for i, r := range recs {
		if envs[i], err = taubench.Events(r); err != nil {
			return nil, err
		}
	}
	graphs := map[int]*toolgraph.Graph{}
	graphOf := func(task int) (*toolgraph.Graph, error) {
		if g, ok := graphs[task]; ok {
			return g, nil
		}
		l := toolgraph.NewLearner()
		for j, o := range recs {
			if o.TaskID == task {
				continue
			}
			for i := range envs[j] {
				if err := l.Observe(&envs[j][i]); err != nil {
					return nil, err
				}
			}
		}
		graphs[task] = l.Graph()
		return graphs[task], nil
	}
	vecs := map[string][]float32{}
	one, zero := 1.0, 0.0
	var out []Report
	for _, v := range []struct {
		name  string
		k     int
		alpha *float64
	}{{"hybrid", 1, nil}, {"hybrid", 3, nil}, {"semantic_only", 3, &one}, {"graph_only", 3, &zero}} {
		rep, err := evaluate(ctx, recs, graphOf, tools, emb, vecs, v.k, v.alpha)
		if err != nil {
			return nil, err
		}
		rep.Variant = v.name
		out = append(out, rep)
	}
	return out, nil
}

func evaluate(ctx context.Context, recs []taubench.Record, graphOf func(int) (*toolgraph.Graph, error), tools []dag.Tool, emb embedder.Embedder, vecs map[string][]float32, k int, alpha *float64) (Report, error) {
	rep := Report{K: k, ByMode: map[string]ModeScore{}}
	sums := map[string]*ModeScore{}
	for _, r := range recs {
		var calls []string
		for _, m := range r.Traj {
			for _, tc := range m.ToolCalls {
				calls = append(calls, tc.Function.Name)
			}
		}
		if len(calls) < 2 {
			continue
		}
		g, err := graphOf(r.TaskID)
		if err != nil {
			return rep, err
		}
		s := &Suggester{Graph: g, Catalog: tools, Embedder: emb, Alpha: alpha, vecs: vecs}
		sg, err := s.Suggest(ctx, Request{Intent: r.Info.Task.Instruction, ContextTools: calls[:1], K: rep.K})
		if err != nil {
			return rep, err
		}
		var used []string
		for _, c := range calls[1:] {
			if c != calls[0] && !slices.Contains(used, c) {
				used = append(used, c)
			}
		}
		hit := 0
		for _, p := range sg.Tools {
			if slices.Contains(used, p.Tool) {
				hit++
			}
			if sg.Mode == ModeSpeculative && p.Writes {
				rep.SpeculativeWrites++
			}
		}
		for _, key := range []string{sg.Mode, "all"} {
			m := sums[key]
			if m == nil {
				m = &ModeScore{}
				sums[key] = m
			}
			m.Suggestions++
			if len(used) > 0 {
				m.Recall += float64(hit) / float64(len(used))
			} else {
				m.Recall++
			}
			if len(sg.Tools) > 0 {
				m.Precision += float64(hit) / float64(len(sg.Tools))
			}
			if hit == len(used) {
				m.AllUsed++
			}
		}
		rep.Sessions++
	}
	for key, m := range sums {
		m.Recall /= float64(m.Suggestions)
		m.Precision /= float64(m.Suggestions)
		if key == "all" {
			rep.All = *m
		} else {
			rep.ByMode[key] = *m
		}
	}
	return rep, nil
}
