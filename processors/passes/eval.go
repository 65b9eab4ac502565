package passes

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/answer"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// RunReport is the measurement of one Reflexion run (`chronicle eval`,
// key reflexion.<run>), rebuilt from the projections the importer's events
// produce: the sessions processor (FLUX evaluation), this processor
// (passes, convergence) and the memory bank (reflections).
type RunReport struct {
	Run       string `json:"run"`
	Questions int    `json:"questions"`
	Passes    int    `json:"passes"`
	// SuccessCurve[n-1] is the number of tasks whose pass n met its
	// criteria (FLUX meets_criteria, read from the sessions projection of
	// the pass's session); LogCurve the log's own "Answer is CORRECT"
	// count per trial; CumulativeCurve the tasks with a correct pass ≤ n.
	SuccessCurve    []int `json:"success_curve"`
	LogCurve        []int `json:"log_curve"`
	CumulativeCurve []int `json:"cumulative_curve"`
	// Agreement: share of passes where meets_criteria ⇔ the log says
	// CORRECT; StringEqualityAgreement the same for the plain (raw string)
	// answer = expected answer baseline.
	Agreement               float64 `json:"evaluator_agreement"`
	StringEqualityAgreement float64 `json:"string_equality_agreement"`
	// Convergence predicting a correct answer, over every pass: the
	// verdict by the thresholds (from the pass's own scores, no ground
	// truth) against the baseline "the agent called Finish".
	Convergence PrecisionRecall `json:"convergence_predicts_correct"`
	Finished    PrecisionRecall `json:"finish_predicts_correct"`
	// ConvergedStable adds the design's "answer stable across passes": a
	// converged pass whose answer (normalised) equals the previous
	// recorded pass's, or the task's first pass. In the Reflexion run a
	// trial is re-run only after a failure, so a correct answer is
	// carried over unchanged: the signal is the protocol's, read here
	// without the ground truth.
	ConvergedStable PrecisionRecall `json:"converged_and_stable_predicts_correct"`
	// Reflections is the memory-recall measurement (nil for a run without
	// reflections).
	Reflections *ReflectionRecall `json:"reflection_recall,omitempty"`
}

// PrecisionRecall of a binary predictor of "the pass's answer is correct".
type PrecisionRecall struct {
	Predicted int     `json:"predicted"`
	Correct   int     `json:"correct"`
	Hits      int     `json:"hits"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

// ReflectionRecall is recall@3 of memory_search with a question over the
// reflection memories (outcome failure, scope of the run): a question
// counts when one of its own reflections is in the top 3. Questions are
// split by their position in task-id order: even positions tune, odd
// positions report. Model is the index's ranking as served
// (search.DefaultRanking); Lexical is BM25 only; Tuned is alpha · cosine + (1 −
// alpha) · BM25/max BM25 with the alpha (grid 0, 0.1, …, 1) best on the
// tuning half. Every figure is on the report half except TunedOnTune.
type ReflectionRecall struct {
	Memories     int     `json:"memories"`
	TuneCases    int     `json:"tune_questions"`
	ReportCases  int     `json:"report_questions"`
	Model        float64 `json:"model_recall_at_3"`
	Lexical      float64 `json:"bm25_recall_at_3"`
	Alpha        float64 `json:"tuned_alpha"`
	Tuned        float64 `json:"tuned_recall_at_3"`
	TunedOnTune  float64 `json:"tuned_recall_at_3_on_tune_half"`
	ModelAll     float64 `json:"model_recall_at_3_all"`
	LexicalAll   float64 `json:"bm25_recall_at_3_all"`
	QuestionsAll int     `json:"questions_with_reflections"`
}

func pr(tp, predicted, positives int) PrecisionRecall {
	p := PrecisionRecall{Predicted: predicted, Correct: positives, Hits: tp}
	if predicted > 0 {
		p.Precision = float64(tp) / float64(predicted)
	}
	if positives > 0 {
		p.Recall = float64(tp) / float64(positives)
	}
	return p
}

// EvaluateReflexion imports a run in process (reflexion.Events) into an
// in-memory store through the sessions processor (LLMDistillation: no
// distilled memories, so the memory bank holds the reflections only),
// this processor and the memory bank, then measures RunReport from the
// projections. emb embeds the reflection memories (nil: skip recall).
func EvaluateReflexion(run *reflexion.Run, name string, emb embedder.Embedder) (RunReport, error) {
	ctx := context.Background()
	rep := RunReport{Run: name}
	envs, err := reflexion.Events(run, name)
	if err != nil {
		return rep, err
	}
	store, err := importRun(envs)
	if err != nil {
		return rep, err
	}
	defer store.Close()

	var tasks []Task
	if err := Each(store, func(t Task) error { tasks = append(tasks, t); return nil }); err != nil {
		return rep, err
	}
	rep.Questions = len(tasks)
	var agree, strEq, convTP, convPred, finTP, finPred, stTP, stPred, positives int
	for _, t := range tasks {
		h, err := History(store, events.EntityKey(t.Scope, t.ID))
		if err != nil {
			return rep, err
		}
		everCorrect := false
		for i, p := range h {
			for len(rep.SuccessCurve) < p.PassNumber {
				rep.SuccessCurve, rep.LogCurve, rep.CumulativeCurve = append(rep.SuccessCurve, 0), append(rep.LogCurve, 0), append(rep.CumulativeCurve, 0)
			}
			v, ok, err := sessions.Get(store, events.EntityKey(t.Scope, p.SessionID))
			if err != nil || !ok || v.Evaluation == nil || len(v.Criteria) != 1 {
				return rep, fmt.Errorf("passes: eval: session %s of pass %d not evaluated (%v)", p.SessionID, p.PassNumber, err)
			}
			rep.Passes++
			meets := v.Evaluation.Recommendation == events.MeetsCriteria
			correct := v.Outcome == events.OutcomeSuccess // the log's verdict
			if meets {
				rep.SuccessCurve[p.PassNumber-1]++
			}
			if correct {
				rep.LogCurve[p.PassNumber-1]++
				positives++
				everCorrect = true
			}
			if everCorrect {
				rep.CumulativeCurve[p.PassNumber-1]++
			}
			if meets == correct {
				agree++
			}
			if (v.Output == v.Criteria[0].Check.Text) == correct {
				strEq++
			}
			if p.Verdict.Converged {
				convPred++
				if correct {
					convTP++
				}
			}
			if p.Verdict.Converged && (i == 0 || answer.Normalize(p.Output) == answer.Normalize(h[i-1].Output)) {
				stPred++
				if correct {
					stTP++
				}
			}
			if p.Status == events.PassCompleted {
				finPred++
				if correct {
					finTP++
				}
			}
		}
	}
	if rep.Passes == 0 {
		return rep, fmt.Errorf("passes: eval: run %s has no passes", name)
	}
	rep.Agreement = float64(agree) / float64(rep.Passes)
	rep.StringEqualityAgreement = float64(strEq) / float64(rep.Passes)
	rep.Convergence = pr(convTP, convPred, positives)
	rep.Finished = pr(finTP, finPred, positives)
	rep.ConvergedStable = pr(stTP, stPred, positives)
	if emb != nil {
		rr, err := reflectionRecall(ctx, store, emb, tasks)
		if err != nil {
			return rep, err
		}
		rep.Reflections = rr
	}
	return rep, nil
}

// reflectionRecall measures ReflectionRecall (nil when there are no
// reflection memories).
func reflectionRecall(ctx context.Context, store *projections.Store, emb embedder.Embedder, tasks []Task) (*ReflectionRecall, error) {
	ix := search.NewIndex(store, emb, nil, memories.SearchSource())
	if err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	n, err := ix.Store().Len(ctx)
	if err != nil || n == 0 {
		return nil, err
	}
	type tcase struct {
		text string
		own  map[string]bool
		cand []search.Candidate
		top  []string // the index's ranking
	}
	var cases []tcase
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	zero := 0.0
	for _, t := range tasks {
		own := map[string]bool{}
		for k := 1; ; k++ {
			id := reflexion.ReflectionMemoryID(t.ID, k)
			if _, ok, err := memories.Get(store, events.EntityKey(t.Scope, id)); err != nil {
				return nil, err
			} else if !ok {
				break
			}
			own[id] = true
		}
		if len(own) == 0 {
			continue
		}
		res, err := ix.Search(ctx, search.Query{Text: t.Task, Outcome: events.OutcomeFailure, Limit: 3, MinConfidence: &zero})
		if err != nil {
			return nil, err
		}
		c := tcase{text: t.Task, own: own}
		for _, h := range res.Memories {
			c.top = append(c.top, h.ID)
		}
		qv, err := emb.Embed(ctx, []string{t.Task})
		if err != nil {
			return nil, err
		}
		if c.cand, err = ix.Store().Candidates(ctx, qv[0], t.Task, search.Filter{Outcome: events.OutcomeFailure}, search.CandidatesPerQuery); err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	hit := func(ids []string, own map[string]bool) bool {
		for i, id := range ids {
			if i < 3 && own[id] {
				return true
			}
		}
		return false
	}
	// rank by alpha · cosine + (1 − alpha) · BM25/max; alpha < 0 means
	// BM25 only (hits with BM25 > 0), ties by id
	rank := func(c tcase, alpha float64) []string {
		maxBM := 0.0
		for _, x := range c.cand {
			maxBM = math.Max(maxBM, x.BM25)
		}
		type r struct {
			id  string
			rel float64
		}
		var rs []r
		for _, x := range c.cand {
			bm := 0.0
			if maxBM > 0 {
				bm = x.BM25 / maxBM
			}
			if alpha < 0 {
				if x.BM25 > 0 {
					rs = append(rs, r{x.ID, x.BM25})
				}
				continue
			}
			rs = append(rs, r{x.ID, alpha*x.Cosine + (1-alpha)*bm})
		}
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].rel != rs[j].rel {
				return rs[i].rel > rs[j].rel
			}
			return rs[i].id < rs[j].id
		})
		var out []string
		for _, x := range rs {
			id := x.id
			if _, bare, ok := events.SplitEntityKey(id); ok {
				id = bare // a memory document's id is its entity key
			}
			out = append(out, id)
		}
		return out
	}
	score := func(half int, f func(tcase) []string) (float64, int) {
		h, n := 0, 0
		for i, c := range cases {
			if half >= 0 && i%2 != half {
				continue
			}
			n++
			if hit(f(c), c.own) {
				h++
			}
		}
		if n == 0 {
			return 0, 0
		}
		return float64(h) / float64(n), n
	}
	rr := &ReflectionRecall{Memories: n, QuestionsAll: len(cases)}
	model := func(c tcase) []string { return c.top }
	lexical := func(c tcase) []string { return rank(c, -1) }
	best := -1.0
	for i := 0; i <= 10; i++ {
		a := float64(i) / 10
		s, _ := score(0, func(c tcase) []string { return rank(c, a) })
		if s > best {
			best, rr.Alpha = s, a
		}
	}
	rr.TunedOnTune, rr.TuneCases = score(0, func(c tcase) []string { return rank(c, rr.Alpha) })
	rr.Tuned, rr.ReportCases = score(1, func(c tcase) []string { return rank(c, rr.Alpha) })
	rr.Model, _ = score(1, model)
	rr.Lexical, _ = score(1, lexical)
	rr.ModelAll, _ = score(-1, model)
	rr.LexicalAll, _ = score(-1, lexical)
	return rr, nil
}

// importRun applies a Reflexion run's events (reflexion.Events) to an
// in-memory store through the sessions processor (LLMDistillation: no
// distilled memories, so the memory bank holds the reflections only),
// this processor and the memory bank. The caller closes the store.
func importRun(envs []events.Envelope) (*projections.Store, error) {
	store, err := projections.Open("reflexion-eval", projections.Options{FS: vfs.NewMem()})
	if err != nil {
		return nil, err
	}
	procs := map[events.Topic]struct {
		name string
		fn   projections.ApplyFunc
	}{
		events.TopicSessions:  {sessions.Name, sessions.Processor{LLMDistillation: true}.Apply},
		events.TopicReasoning: {Name, Processor{}.Apply},
		events.TopicMemories:  {memories.Name, memories.Processor{}.Apply},
	}
	offs := map[events.Topic]int64{}
	for i := range envs {
		ti, _ := events.Lookup(envs[i].Type)
		p := procs[ti.Topic]
		if _, err := store.Apply(p.name, projections.Position{Topic: string(ti.Topic), Offset: offs[ti.Topic]}, &envs[i], p.fn); err != nil {
			store.Close()
			return nil, fmt.Errorf("%s: %w", envs[i].ID, err)
		}
		offs[ti.Topic]++
	}
	return store, nil
}
