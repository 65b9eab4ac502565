package pair

import (
	"context"
	"fmt"
	"sort"
	"strconv"

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

// RecallK is the cut-off of RecallAt3.
const RecallK = 3

// RecallAt3 is pair_recall_at_3 on tau-bench records, for `chronicle eval`.
//
// Memory bank: every record goes through the importer (taubench.Events)
// and the sessions processor (which evaluates it and projects the
// coordination patterns) into a temporary in-memory projection store; the
// deterministic distiller extracts the session's memories from the
// projected input and evaluation, as the processor does, and each is
// applied, in record order, by the memory-bank processor
// (memories.Processor). Memories and patterns are indexed with
// search.NewIndex(store, emb, nil, memories and pattern sources).
//
// Cases: the records with reward 0 whose task has a trial with reward 1,
// and for which PAIR retrieves at all (composite below PassComposite; a
// failed trial the evaluator passes gets no retrieval and is not counted).
// n is their number.
//
// For each case the PAIR queries of its gaps (WeightedGaps, SearchQuery
// with the session excluded, Keep) are run, and the ranked lists of the
// gaps are interleaved by rank (the first hit of each gap in priority
// order, then the second ones, …, repeats skipped); the top RecallK of
// that order are the session's top 3. A case is a hit when one of them
// was distilled from a trial of the same task with reward 1 (its source
// sessions contain taubench-airline/<task>/<trial> of such a trial).
//
// Each gap's query is QueryFor(gap, the session's goal), as the worker's.
// model ranks it with (*search.Index).Search, the ranking the worker uses
// (search.DefaultRanking unless the index's was replaced). Lexical ranks
// the same candidates of the same vector store (same filters) by BM25
// alone, ties by id, for the gap alone (Query: the baseline before the
// goal expansion); LexicalWithGoal the same for the expanded query.
// WithPatterns ranks each gap with Ranked, the worker's merge of memories
// and coordination patterns.
//
// Tuning and Report are the figures over the two halves of the tasks
// (tuningTasks). The ranking's constants were chosen on the tuning half
// only (TestTuneRanking, which also scores tau-bench tasks in neither
// half); the report half is the figure for a ranking not
// tuned on it.
func RecallAt3(recs []taubench.Record, emb embedder.Embedder) (Recall, error) {
	ctx := context.Background()
	b, err := buildBank(ctx, recs, emb)
	if err != nil {
		return Recall{}, err
	}
	defer b.store.Close()
	var all, tune, report tally
	tuning := tuningTasks(b.cases)
	for _, c := range b.cases {
		h, err := b.score(ctx, c)
		if err != nil {
			return Recall{}, err
		}
		all.add(h)
		if tuning[c.task] {
			tune.add(h)
		} else {
			report.add(h)
		}
	}
	r := all.share()
	tr, rr := tune.share(), report.share()
	r.Tuning, r.Report = &tr, &rr
	return r, nil
}

// tuningTasks splits the tasks that have cases into RecallAt3's two
// halves: in ascending numeric order of task id, the first, third, fifth …
// tune and the others report. Every ranking constant was chosen on the
// tuning half only; the report half is the figure quoted for a ranking
// nobody tuned on it. The split depends on which sessions are cases, never
// on how any ranking does on them.
func tuningTasks(cases []recallCase) map[string]bool {
	var ids []int
	seen := map[string]bool{}
	for _, c := range cases {
		if !seen[c.task] {
			seen[c.task] = true
			n, _ := strconv.Atoi(c.task)
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	out := map[string]bool{}
	for i, n := range ids {
		if i%2 == 0 {
			out[strconv.Itoa(n)] = true
		}
	}
	return out
}

// recallCase is one failed session of RecallAt3.
type recallCase struct {
	id, task string
	ev       events.EvaluationData
	// goal is distill.TaskSummary of the session's task.
	goal string
	// good are the successful sessions of the same task.
	good map[string]bool
}

// recallBank is the memory bank and index RecallAt3 ranks over.
type recallBank struct {
	store *projections.Store
	ix    *search.Index
	cases []recallCase
}

// caseHits says which rankings put a memory of a successful trial of the
// case's task in the top RecallK.
type caseHits struct{ model, lexical, lexicalGoal, patterns bool }

type tally struct{ n, model, lexical, lexicalGoal, patterns int }

func (t *tally) add(h caseHits) {
	t.n++
	for _, x := range []struct {
		hit bool
		n   *int
	}{{h.model, &t.model}, {h.lexical, &t.lexical}, {h.lexicalGoal, &t.lexicalGoal}, {h.patterns, &t.patterns}} {
		if x.hit {
			*x.n++
		}
	}
}

func (t tally) share() Recall {
	if t.n == 0 {
		return Recall{}
	}
	n := float64(t.n)
	return Recall{Sessions: t.n, Model: float64(t.model) / n, Lexical: float64(t.lexical) / n, LexicalWithGoal: float64(t.lexicalGoal) / n, WithPatterns: float64(t.patterns) / n}
}

// buildBank imports recs, evaluates and distils them into an in-memory
// store, indexes memories and patterns, and lists RecallAt3's cases.
func buildBank(ctx context.Context, recs []taubench.Record, emb embedder.Embedder) (*recallBank, error) {
	store, err := projections.Open("pair-recall", projections.Options{FS: vfs.NewMem()})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*recallBank, error) { store.Close(); return nil, err }

	type sess struct {
		id, task string
		reward   float64
		ev       events.EvaluationData
		goal     string
	}
	var all []sess
	succeeded := map[string]map[string]bool{} // task → successful session ids
	var off int64
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			return fail(err)
		}
		for i := range envs { // the sessions processor projects the coordination patterns
			if err := sessions.ApplyLocally(store, sessions.Processor{LLMDistillation: true}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &envs[i]); err != nil {
				return fail(err)
			}
			off++
		}
		// the processor has evaluated the session: read what it projected
		sid := taubench.SessionID(r.TaskID, r.Trial)
		in, ok, err := sessions.Input(store, events.EntityKey(taubench.Scope, sid))
		if err != nil || !ok {
			return fail(fmt.Errorf("pair: recall: session %s not projected (%v)", sid, err))
		}
		v, _, err := sessions.Get(store, events.EntityKey(taubench.Scope, sid))
		if err != nil || v.Evaluation == nil {
			return fail(fmt.Errorf("pair: recall: session %s not evaluated (%v)", sid, err))
		}
		ev := *v.Evaluation
		task := fmt.Sprint(r.TaskID)
		all = append(all, sess{id: sid, task: task, reward: r.Reward, ev: ev, goal: distill.TaskSummary(in.Task)})
		if r.Reward == 1 {
			if succeeded[task] == nil {
				succeeded[task] = map[string]bool{}
			}
			succeeded[task][sid] = true
		}
		mems, err := distill.Deterministic{}.Extract(ctx, distill.NewSession(in, ev))
		if err != nil {
			return fail(err)
		}
		done := &envs[len(envs)-1]
		for i, m := range mems {
			env, err := events.Derive(done, "chronicle/sessions", events.MemoryRecorded, i, events.MemoryRecordedData{
				MemoryID: distill.MemoryID(done.EffectiveScope(), m.Title, m.Content), Title: m.Title, Description: m.Description,
				Content: m.Content, Outcome: m.Outcome, Tags: m.Tags, Source: "distilled", SourceSession: sid,
			})
			if err != nil {
				return fail(err)
			}
			if _, err := store.Apply(memories.Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &env, memories.Processor{}.Apply); err != nil {
				return fail(err)
			}
			off++
		}
	}
	ix := search.NewIndex(store, emb, nil, memories.SearchSource(), sessions.PatternSource())
	if err := ix.Sync(ctx); err != nil {
		return fail(err)
	}
	b := &recallBank{store: store, ix: ix}
	for _, s := range all {
		if s.reward != 0 || len(succeeded[s.task]) == 0 || s.ev.Composite >= PassComposite {
			continue
		}
		b.cases = append(b.cases, recallCase{id: s.id, task: s.task, ev: s.ev, goal: s.goal, good: succeeded[s.task]})
	}
	return b, nil
}

// score ranks case c's gaps three ways (see RecallAt3).
func (b *recallBank) score(ctx context.Context, c recallCase) (caseHits, error) {
	var byModel, byLexical, byLexicalGoal, withPatterns [][]search.Hit
	for _, g := range WeightedGaps(c.ev) {
		res, err := b.ix.Search(ctx, SearchQuery(g, c.goal, c.id, nil))
		if err != nil {
			return caseHits{}, err
		}
		byModel = append(byModel, Keep(res.Memories, c.id))
		lex, err := lexicalSearch(ctx, b.ix.Store(), Query(g), c.id)
		if err != nil {
			return caseHits{}, err
		}
		byLexical = append(byLexical, lex)
		if lex, err = lexicalSearch(ctx, b.ix.Store(), QueryFor(g, c.goal), c.id); err != nil {
			return caseHits{}, err
		}
		byLexicalGoal = append(byLexicalGoal, lex)
		both, err := Ranked(ctx, b.ix, g, c.goal, c.id, nil)
		if err != nil {
			return caseHits{}, err
		}
		withPatterns = append(withPatterns, both)
	}
	return caseHits{
		model:       hitsTask(Interleave(byModel, RecallK), c.good),
		lexical:     hitsTask(Interleave(byLexical, RecallK), c.good),
		lexicalGoal: hitsTask(Interleave(byLexicalGoal, RecallK), c.good),
		patterns:    hitsTask(Interleave(withPatterns, RecallK), c.good),
	}, nil
}

// Recall is the result of RecallAt3: shares of Sessions, in [0, 1].
type Recall struct {
	// Sessions is the number of cases.
	Sessions int `json:"sessions"`
	// Model is pair_recall_at_3: memories only, ranked by the index.
	Model float64 `json:"model"`
	// Lexical is the BM25-only baseline on the same memories, queried with
	// the gap alone (Query: the query before the goal expansion).
	Lexical float64 `json:"lexical"`
	// LexicalWithGoal is BM25 alone queried with the expanded query
	// (QueryFor, as the model ranking is).
	LexicalWithGoal float64 `json:"lexical_with_goal"`
	// WithPatterns ranks what the worker retrieves — memories and
	// coordination patterns merged by relevance (Ranked) — and counts a
	// case when one of the top 3 was learned from a successful trial of
	// the same task (a memory distilled from it, or a pattern it followed).
	WithPatterns float64 `json:"with_patterns"`
	// Tuning and Report are the same figures over the cases of the tuning
	// half (TuningTask) and of the report half of the tasks (zero inside
	// them).
	Tuning *Recall `json:"tuning,omitempty"`
	Report *Recall `json:"report,omitempty"`
}

// lexicalSearch is the BM25-only ranking of text over vs with the filters
// of SearchQuery: hits with a positive BM25, best first, ties by
// id, at most QueryLimit, through Keep.
func lexicalSearch(ctx context.Context, vs search.VectorStore, text, sessionID string) ([]search.Hit, error) {
	f := search.Filter{MinConfidence: MinConfidence, Outcome: events.OutcomeSuccess, ExcludeSourceSession: sessionID}
	cands, err := vs.Candidates(ctx, nil, text, f, search.CandidatesPerQuery)
	if err != nil {
		return nil, err
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].BM25 != cands[j].BM25 {
			return cands[i].BM25 > cands[j].BM25
		}
		return cands[i].ID < cands[j].ID
	})
	var hits []search.Hit
	for _, c := range cands {
		if c.BM25 <= 0 || len(hits) == QueryLimit {
			break
		}
		hits = append(hits, search.Hit{ID: c.ID, Title: c.Title, Description: c.Description, Content: c.Content, Outcome: c.Outcome,
			Confidence: c.Confidence, UsageCount: c.UsageCount, Relevance: c.BM25, Scope: c.Scope, Tags: c.Tags, SourceSessions: c.SourceSessions})
	}
	return Keep(hits, sessionID), nil
}

// Interleave merges ranked lists by rank — the first of each list in list
// order, then the second of each, … — skipping memories already taken,
// and returns the first k.
func Interleave(lists [][]search.Hit, k int) []search.Hit {
	var out []search.Hit
	seen := map[string]bool{}
	for rank := 0; len(out) < k; rank++ {
		more := false
		for _, l := range lists {
			if rank >= len(l) {
				continue
			}
			more = true
			if h := l[rank]; !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h)
				if len(out) == k {
					return out
				}
			}
		}
		if !more {
			break
		}
	}
	return out
}

// hitsTask reports whether one of hits was distilled from one of the
// sessions in want.
func hitsTask(hits []search.Hit, want map[string]bool) bool {
	for _, h := range hits {
		for _, s := range h.SourceSessions {
			if want[s] {
				return true
			}
		}
	}
	return false
}
