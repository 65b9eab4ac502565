package toolsearch

import (
	"context"
	"fmt"
	"sync"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// EvalLimit is the number of tools each evaluated search answers (the
// route's default limit): hit@k and MRR are over these.
const EvalLimit = DefaultLimit

// Report measures GET /v1/tools/search?context_tools=… on tau-bench
// sessions, leave-one-task-out. For each task, the tool graph is learned
// from the sessions of every other task and the Tool collection is built
// from that graph exactly as the pipeline builds it (toolgraph.ToolDoc of
// its profiles, indexed by search.Index with the embedder given); then for
// each session of the task and each call after the first, one query:
// text = the task's instruction, context_tools = the calls before it,
// target = the tool called. Each query runs Search (the route's function)
// three times: hybrid (the local α), semantic only (α = 1, which is the
// plain search without context_tools) and graph only (α = 0); all three
// re-rank the same candidates. Nothing is tuned: α's rule and the
// candidate expansion are the design's, the limit the route's default.
type Report struct {
	// Split says how the figures were obtained.
	Split string `json:"split"`
	// Limit is the number of tools per answer (hit@k and MRR are @Limit).
	Limit   int `json:"limit"`
	Tasks   int `json:"tasks"`
	Queries int `json:"queries"`
	// ColdStart counts the queries whose α was 1 (the last context tool
	// had too few observations): there hybrid equals semantic only.
	ColdStart int `json:"cold_start_queries"`
	// MeanAlpha is the mean local α over the queries.
	MeanAlpha float64 `json:"mean_alpha"`
	// InCandidates is the share of queries whose target is among the
	// semantic candidates re-ranked: no variant can do better at hit@Limit.
	InCandidates float64 `json:"target_in_candidates"`
	Semantic     Scores  `json:"semantic"`
	Graph        Scores  `json:"graph"`
	Hybrid       Scores  `json:"hybrid"`
	// Halves are the same figures on the queries of even and of odd task
	// ids (a spread, not a tuning split: nothing is tuned).
	Halves map[string]Half `json:"halves"`
}

// Scores are retrieval figures over a set of queries: the share whose
// target is the first answer (HitAt1), among the first three (HitAt3), and
// the mean reciprocal rank of the target within the answer (0 when
// absent).
type Scores struct {
	HitAt1 float64 `json:"hit_at_1"`
	HitAt3 float64 `json:"hit_at_3"`
	MRR    float64 `json:"mrr"`
}

// Half is a Report's figures on part of the queries.
type Half struct {
	Queries  int    `json:"queries"`
	Semantic Scores `json:"semantic"`
	Graph    Scores `json:"graph"`
	Hybrid   Scores `json:"hybrid"`
}

// Evaluate computes the Report on recs with emb; store holds the index's
// vector cache (any scratch store: the projections are not touched).
func Evaluate(ctx context.Context, recs []taubench.Record, emb embedder.Embedder, store *projections.Store) (Report, error) {
	rep := Report{Split: "leave-one-task-out over every task; nothing tuned", Limit: EvalLimit, Halves: map[string]Half{}}
	envs := make([][]events.Envelope, len(recs))
	byTask := map[int][]int{}
	var tasks []int
	for i, r := range recs {
		var err error
		if envs[i], err = taubench.Events(r); err != nil {
			return rep, err
		}
		if _, ok := byTask[r.TaskID]; !ok {
			tasks = append(tasks, r.TaskID)
		}
		byTask[r.TaskID] = append(byTask[r.TaskID], i)
	}
	emb = &queryCache{Embedder: emb, vecs: map[string][]float32{}}
	sums := map[string]*[3]Scores{} // "all", "even", "odd" → semantic, graph, hybrid
	counts := map[string]int{}
	zero, one := 0.0, 1.0
	alphaSum := 0.0
	for _, task := range tasks {
		l := toolgraph.NewLearner()
		for j := range recs {
			if recs[j].TaskID == task {
				continue
			}
			for i := range envs[j] {
				if err := l.Observe(&envs[j][i]); err != nil {
					return rep, err
				}
			}
		}
		g := l.Graph()
		var docs []search.Doc
		for _, p := range g.Profiles(toolgraph.ToolNeighbours) {
			docs = append(docs, toolgraph.ToolDoc(p))
		}
		ix := search.NewIndex(store, emb, nil, search.Source{Collection: search.Tools, Projection: "toolsearch-eval",
			IDOfKey: func(string) string { return "" },
			Docs:    func(*projections.Store, []string) ([]search.Doc, []string, error) { return docs, nil, nil }})
		rep.Tasks++
		for _, ri := range byTask[task] {
			r := recs[ri]
			var calls []string
			for _, m := range r.Traj {
				for _, tc := range m.ToolCalls {
					calls = append(calls, tc.Function.Name)
				}
			}
			for i := 1; i < len(calls); i++ {
				term := GraphTermOf(g, calls[:i])
				found := false // the target is among the candidates
				semantic := func(ctx context.Context, limit int) ([]Candidate, error) {
					res, err := ix.Search(ctx, search.Query{Text: r.Info.Task.Instruction, Limit: limit, Collection: search.Tools})
					if err != nil {
						return nil, err
					}
					out := make([]Candidate, len(res.Memories))
					for j, h := range res.Memories {
						out[j] = Candidate{Tool: h.ID, Semantic: h.Relevance}
						found = found || h.ID == calls[i]
					}
					return out, nil
				}
				var got [3]Scores
				for v, opt := range []Options{{Alpha: &one}, {Alpha: &zero}, {}} {
					res, err := Search(ctx, EvalLimit, term, opt, semantic)
					if err != nil {
						return rep, fmt.Errorf("toolsearch: task %d: %w", task, err)
					}
					got[v] = score(res.Tools, calls[i])
				}
				half := "even"
				if task%2 == 1 {
					half = "odd"
				}
				for _, key := range []string{"all", half} {
					if sums[key] == nil {
						sums[key] = &[3]Scores{}
					}
					for v := range got {
						sums[key][v].HitAt1 += got[v].HitAt1
						sums[key][v].HitAt3 += got[v].HitAt3
						sums[key][v].MRR += got[v].MRR
					}
					counts[key]++
				}
				alphaSum += term.Alpha
				if found {
					rep.InCandidates++
				}
				if term.Alpha == 1 {
					rep.ColdStart++
				}
			}
		}
	}
	mean := func(key string) (s [3]Scores) {
		n := float64(counts[key])
		if n == 0 {
			return s
		}
		for v, x := range sums[key] {
			s[v] = Scores{HitAt1: x.HitAt1 / n, HitAt3: x.HitAt3 / n, MRR: x.MRR / n}
		}
		return s
	}
	rep.Queries = counts["all"]
	if rep.Queries > 0 {
		rep.MeanAlpha = alphaSum / float64(rep.Queries)
		rep.InCandidates /= float64(rep.Queries)
	}
	all := mean("all")
	rep.Semantic, rep.Graph, rep.Hybrid = all[0], all[1], all[2]
	for _, h := range []string{"even", "odd"} {
		s := mean(h)
		rep.Halves[h] = Half{Queries: counts[h], Semantic: s[0], Graph: s[1], Hybrid: s[2]}
	}
	return rep, nil
}

// score is one query's figures: hit@1, hit@3 (0 or 1) and the reciprocal
// rank of target in tools.
func score(tools []Scored, target string) Scores {
	for i, t := range tools {
		if t.Tool == target {
			s := Scores{MRR: 1 / float64(i+1)}
			if i == 0 {
				s.HitAt1 = 1
			}
			if i < 3 {
				s.HitAt3 = 1
			}
			return s
		}
	}
	return Scores{}
}

// queryCache is an embedder that remembers its vectors by text: every
// query of a session has the same text (the task's instruction).
type queryCache struct {
	embedder.Embedder
	mu   sync.Mutex
	vecs map[string][]float32
}

// Embed implements embedder.Embedder.
func (c *queryCache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]float32, len(texts))
	var miss []string
	var at []int
	for i, t := range texts {
		if v, ok := c.vecs[t]; ok {
			out[i] = v
		} else {
			miss, at = append(miss, t), append(at, i)
		}
	}
	if len(miss) > 0 {
		vs, err := c.Embedder.Embed(ctx, miss)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			out[i], c.vecs[miss[j]] = vs[j], vs[j]
		}
	}
	return out, nil
}
