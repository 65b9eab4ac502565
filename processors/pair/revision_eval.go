package pair

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Coverage is the tau-bench measurement of the deterministic revision
// (issue 13 item 5): over the failed sessions whose task has a successful
// trial and that PAIR revises (composite below PassComposite, as in
// RecallAt3), the required writes each missed — its weighted tool_call
// gaps of a taubench.MutatingTools tool — and how many of them the
// revision's FollowSequence names (by tool), against the baseline of the
// task's most frequent tool sequence among its other sessions.
type Coverage struct {
	// Sessions is the number of revised failed sessions; MissedWrites
	// the required writes they missed in total.
	Sessions     int `json:"sessions"`
	MissedWrites int `json:"missed_writes"`
	// Revision / Baseline: shares of MissedWrites named.
	Revision float64 `json:"revision_coverage"`
	Baseline float64 `json:"most_frequent_sequence_coverage"`
	// WithSequence is how many revisions carried a sequence to follow.
	WithSequence int `json:"revisions_with_sequence"`
}

// RevisionCoverage measures Coverage on tau-bench records with the memory
// bank and index built as RecallAt3 builds them (sessions processor,
// deterministic distiller, memory bank, memories and coordination
// patterns indexed with emb), each failed session's context from the pair
// worker's own Plan (retrieval excludes the session's own memories and
// patterns), and its revision from Revise. Baseline: among the task's
// other sessions, the most frequent successful tool sequence
// (distill.Steps), ties by the sequence text. Nothing is tuned.
func RevisionCoverage(recs []taubench.Record, emb embedder.Embedder) (Coverage, error) {
	ctx := context.Background()
	store, err := projections.Open("pair-revision", projections.Options{FS: vfs.NewMem()})
	if err != nil {
		return Coverage{}, err
	}
	defer store.Close()
	type sess struct {
		id, task string
		reward   float64
		steps    []string
	}
	var all []sess
	var off int64
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			return Coverage{}, err
		}
		for i := range envs {
			if _, err := store.Apply(sessions.Name, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &envs[i], sessions.Processor{LLMDistillation: true}.Apply); err != nil {
				return Coverage{}, err
			}
			off++
		}
		sid := taubench.SessionID(r.TaskID, r.Trial)
		key := events.EntityKey(taubench.Scope, sid)
		in, _, err := sessions.Input(store, key)
		if err != nil {
			return Coverage{}, err
		}
		v, _, err := sessions.Get(store, key)
		if err != nil || v.Evaluation == nil {
			return Coverage{}, fmt.Errorf("pair: coverage: session %s not evaluated (%v)", sid, err)
		}
		all = append(all, sess{id: sid, task: fmt.Sprint(r.TaskID), reward: r.Reward, steps: distill.Steps(in.Calls)})
		mems, err := distill.Deterministic{}.Extract(ctx, distill.NewSession(in, *v.Evaluation))
		if err != nil {
			return Coverage{}, err
		}
		done := &envs[len(envs)-1]
		for i, m := range mems {
			env, err := events.Derive(done, "chronicle/sessions", events.MemoryRecorded, i, events.MemoryRecordedData{
				MemoryID: distill.MemoryID(done.EffectiveScope(), m.Title, m.Content), Title: m.Title, Description: m.Description,
				Content: m.Content, Outcome: m.Outcome, Tags: m.Tags, Source: "distilled", SourceSession: sid,
			})
			if err != nil {
				return Coverage{}, err
			}
			if _, err := store.Apply(memories.Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &env, memories.Processor{}.Apply); err != nil {
				return Coverage{}, err
			}
			off++
		}
	}
	ix := search.NewIndex(store, emb, nil, memories.SearchSource(), sessions.PatternSource())
	if err := ix.Sync(ctx); err != nil {
		return Coverage{}, err
	}
	w := &Worker{Store: store, Index: ix}
	succeeded := map[string]bool{}
	for _, s := range all {
		if s.reward == 1 {
			succeeded[s.task] = true
		}
	}
	var c Coverage
	var byRevision, byBaseline int
	for _, s := range all {
		if s.reward != 0 || !succeeded[s.task] {
			continue
		}
		key := events.EntityKey(taubench.Scope, s.id)
		v, _, err := sessions.Get(store, key)
		if err != nil {
			return c, err
		}
		ev := *v.Evaluation
		if ev.Composite >= PassComposite {
			continue
		}
		plan, err := w.Plan(ctx, taubench.Scope, ev)
		if err != nil || plan.Context == nil {
			return c, fmt.Errorf("pair: coverage: %s: no context (%v)", s.id, err)
		}
		rev := Revise(*plan.Context)
		c.Sessions++
		if len(rev.FollowSequence) > 0 {
			c.WithSequence++
		}
		revTools := toolSet(rev.FollowSequence)
		baseTools := toolSet(mostFrequent(s.id, s.task, func(yield func(id, task string, steps []string) bool) {
			for _, o := range all {
				if !yield(o.id, o.task, o.steps) {
					return
				}
			}
		}))
		crit := map[string]events.Criterion{}
		for _, cr := range v.Criteria {
			crit[cr.ID] = cr
		}
		for _, g := range WeightedGaps(ev) {
			cr := crit[g.CriterionID]
			if cr.Check.Kind != events.CheckToolCall || !taubench.IsMutating(cr.Check.Name) {
				continue
			}
			c.MissedWrites++
			if revTools[cr.Check.Name] {
				byRevision++
			}
			if baseTools[cr.Check.Name] {
				byBaseline++
			}
		}
	}
	if c.MissedWrites > 0 {
		c.Revision = float64(byRevision) / float64(c.MissedWrites)
		c.Baseline = float64(byBaseline) / float64(c.MissedWrites)
	}
	return c, nil
}

func toolSet(steps []string) map[string]bool {
	out := map[string]bool{}
	for _, s := range steps {
		out[ToolOf(s)] = true
	}
	return out
}

// mostFrequent is the most frequent tool sequence among the sessions of
// task other than self (ties by the sequence text, smallest first).
func mostFrequent(self, task string, each func(func(id, task string, steps []string) bool)) []string {
	count := map[string]int{}
	seqs := map[string][]string{}
	each(func(id, t string, steps []string) bool {
		if t == task && id != self {
			k := strings.Join(steps, "\n")
			count[k]++
			seqs[k] = steps
		}
		return true
	})
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) == 0 {
		return nil
	}
	return seqs[keys[0]]
}
