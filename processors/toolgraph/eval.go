package toolgraph

import (
	"errors"
	"fmt"
	"sort"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// Accuracy is next-tool accuracy of the learned graph and of the two
// baselines over the same predictions. Accuracies are shares in [0, 1].
type Accuracy struct {
	// Predictions is the number of predicted calls.
	Predictions int `json:"predictions"`
	// NextToolTop1 and NextToolTop3: the learned graph (Graph.Next) had the
	// actual call first, or among its first three.
	NextToolTop1 float64 `json:"next_tool_top1"`
	NextToolTop3 float64 `json:"next_tool_top3"`
	// BaselineFrequency*: the training sessions' most frequent tools.
	BaselineFrequencyTop1 float64 `json:"baseline_frequency_top1"`
	BaselineFrequencyTop3 float64 `json:"baseline_frequency_top3"`
	// BaselineBigram*: the previous tool's most frequent successors in the
	// training sessions, then the most frequent tools (also for the first
	// call, which has no previous tool).
	BaselineBigramTop1 float64 `json:"baseline_bigram_top1"`
	BaselineBigramTop3 float64 `json:"baseline_bigram_top3"`
	// MessageTop1 and MessageTop3: the learned graph told the user's last
	// message before the call (NextAfterMessage with outcomes; the graph
	// learned the training sessions' words). Equal to NextToolTop1/3 on a
	// data set without user messages (HotPotQA).
	MessageTop1 float64 `json:"next_tool_with_message_top1"`
	MessageTop3 float64 `json:"next_tool_with_message_top3"`
}

// Report is the result of EvaluateNextTool.
type Report struct {
	// Accuracy covers every call of every held-out session, the first call
	// included (predicted from the start prior by the graph and from
	// frequency by both baselines).
	Accuracy
	// WithContext covers the calls that have a previous call in their
	// session (the first calls left out).
	WithContext Accuracy `json:"with_context"`
	// Tasks and Sessions evaluated (tasks = folds).
	Tasks    int `json:"tasks"`
	Sessions int `json:"sessions"`
	// FirstCalls is the number of first calls among Predictions.
	FirstCalls int `json:"first_calls"`
	// PriorFallbacks is the number of graph predictions made from a prior
	// (first calls, and context tools with fewer than MinObservations
	// observations in training).
	PriorFallbacks int `json:"prior_fallbacks"`
	// Tuning and Held are the same leave-one-task-out predictions split by
	// the held-out task: Tuning the tasks with an even id (or index), on
	// which the model's choices (levels, ContextMinObservations) were
	// made; Held the odd ones, never looked at for a choice.
	Tuning Accuracy `json:"tuning_half"`
	Held   Accuracy `json:"report_half"`
	// TuningWithContext and HeldWithContext are WithContext split the
	// same way.
	TuningWithContext Accuracy `json:"tuning_half_with_context"`
	HeldWithContext   Accuracy `json:"report_half_with_context"`
}

// DomainReport is EvaluateNextTool's report on another data set.
type DomainReport struct {
	// Domain names the data set and how its calls were read.
	Domain string `json:"domain"`
	Report
}

// session is one tau-bench session's tool calls.
type session struct {
	task  int
	calls []call
}

func (s session) tools() []string {
	out := make([]string, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.Tool
	}
	return out
}

// sessionsOf maps records to sessions through taubench.Events, the events
// the processor would consume.
func sessionsOf(recs []taubench.Record) ([]session, error) {
	out := make([]session, 0, len(recs))
	for _, rec := range recs {
		evs, err := taubench.Events(rec)
		if err != nil {
			return nil, err
		}
		s := session{task: rec.TaskID}
		var last []string // Words of the last user minute, as Transitions keeps them
		for i := range evs {
			if isUserMinute(&evs[i]) {
				if last, _, err = userWords(&evs[i]); err != nil {
					return nil, err
				}
				continue
			}
			if evs[i].Type != events.WorkflowTaskCompleted {
				continue
			}
			c, err := parseCall(&evs[i])
			if err != nil {
				return nil, err
			}
			c.Words = last
			s.calls = append(s.calls, c)
		}
		out = append(out, s)
	}
	return out, nil
}

// EvaluateNextTool measures next-tool prediction on tau-bench records by
// leave-one-task-out: for each task, a Graph is learned (Learner, the
// processor's learning code, in memory) from the sessions of every other
// task, and each call of the held-out task's sessions is predicted from the
// calls before it in its session (Graph.Next with the session's calls so
// far; the first call of a session is predicted too, with an empty
// context). Two baselines are learned from the same training sessions and
// asked the same questions: global tool frequency, and bigram counts (the
// previous tool's most frequent successors, filled up with the most
// frequent tools). Ties are broken by tool name everywhere. Nothing of the
// held-out task reaches the training side. Errors: no records, or a record
// that taubench.Events rejects.
func EvaluateNextTool(recs []taubench.Record) (Report, error) {
	if len(recs) == 0 {
		return Report{}, errors.New("toolgraph: evaluate: no records")
	}
	sessions, err := sessionsOf(recs)
	if err != nil {
		return Report{}, err
	}
	return evaluate(sessions, nil)
}

// DomainHotPotQA is the DomainReport.Domain of EvaluateReflexionActions.
const DomainHotPotQA = "hotpotqa-react-actions"

// EvaluateReflexionActions measures next-tool prediction on a Reflexion
// HotPotQA run (reflexion.Bundled) the way EvaluateNextTool does on
// tau-bench: leave-one-question-out (a question's trials are one task;
// tasks are numbered in the run's question order, so the tuning half is
// the even-numbered questions), every action of every trial predicted
// from the actions before it in its trial. The calls are the agent's
// actions Search, Lookup and Finish (and any other well-formed action,
// such as the one Compare of the reflexion run); an action that does not
// parse is left out. A call failed when the importer (reflexion.Events)
// marks its workflow.task.completed.v1 unsuccessful (a Search that found
// no page); Finish, which the importer does not emit as a tool call,
// counts as succeeded. Finish is included because when to answer is the
// decision the agent makes at every step; with three tools top-3 is
// nearly 1 for every predictor and top-1 is the figure that tells them
// apart. Errors: an empty run, or one the importer rejects.
func EvaluateReflexionActions(run *reflexion.Run, name string) (DomainReport, error) {
	sessions, err := reflexionSessions(run, name)
	if err != nil {
		return DomainReport{}, err
	}
	if len(sessions) == 0 {
		return DomainReport{}, errors.New("toolgraph: evaluate: no questions in the run")
	}
	rep, err := evaluate(sessions, nil)
	return DomainReport{Domain: DomainHotPotQA + "/" + name, Report: rep}, err
}

// reflexionSessions reads a run's trials as sessions of actions (see
// EvaluateReflexionActions), task = question number.
func reflexionSessions(run *reflexion.Run, name string) ([]session, error) {
	evs, err := reflexion.Events(run, name)
	if err != nil {
		return nil, err
	}
	failed := map[[2]string]bool{}
	for i := range evs {
		if evs[i].Type != events.WorkflowTaskCompleted {
			continue
		}
		var d events.TaskCompletedData
		if err := evs[i].Decode(&d); err != nil {
			return nil, err
		}
		failed[[2]string{d.WorkflowID, d.TaskID}] = !d.Success
	}
	var sessions []session
	for qi, q := range reflexion.Questions(run, name) {
		for ai, a := range q.Agents {
			sid := reflexion.SessionID(q.Task, q.Trials[ai])
			s := session{task: qi}
			for _, st := range a.Steps {
				if st.Tool == "" {
					continue
				}
				s.calls = append(s.calls, call{Key: sid, Workflow: sid, Tool: st.Tool,
					Failed: failed[[2]string{sid, fmt.Sprintf("step-%d", st.N)}]})
			}
			sessions = append(sessions, s)
		}
	}
	return sessions, nil
}

// evaluate is EvaluateNextTool on decoded sessions, with non-default
// scoring parameters when p is not nil.
func evaluate(sessions []session, p *params) (Report, error) {
	fs, err := learnFolds(sessions)
	if err != nil {
		return Report{}, err
	}
	return evaluateFolds(sessions, fs, p), nil
}

// fold is one held-out task of the leave-one-task-out evaluation, with
// the graph and the baselines learned from every other task.
type fold struct {
	held int
	g    *Graph
	base *baselines
}

// learnFolds learns the folds of sessions, one per task in task order.
// The learned graphs depend on the sessions alone, so the words choice's
// variants (TestWordsChoice) share them: evaluateFolds only sets their
// scoring parameters.
func learnFolds(sessions []session) ([]fold, error) {
	taskSet := map[int]bool{}
	for _, s := range sessions {
		taskSet[s.task] = true
	}
	tasks := make([]int, 0, len(taskSet))
	for t := range taskSet {
		tasks = append(tasks, t)
	}
	sort.Ints(tasks)
	out := make([]fold, 0, len(tasks))
	for _, held := range tasks {
		l := NewLearner()
		base := newBaselines()
		for _, s := range sessions {
			if s.task == held {
				continue
			}
			for _, c := range s.calls {
				if err := l.observeCall(c); err != nil {
					return nil, fmt.Errorf("toolgraph: evaluate: %w", err)
				}
			}
			base.learn(s.tools())
		}
		base.freeze()
		out = append(out, fold{held: held, g: l.Graph(), base: base})
	}
	return out, nil
}

// evaluateFolds predicts every held-out call of fs with the scoring
// parameters p (nil: the defaults), which it sets on the folds' graphs.
func evaluateFolds(sessions []session, fs []fold, p *params) Report {
	var all, ctx, even, odd, evenCtx, oddCtx hits
	rep := Report{Tasks: len(fs), Sessions: len(sessions)}
	for _, f := range fs {
		held, g, base := f.held, f.g, f.base
		if p != nil {
			g.setParams(*p)
		} else {
			g.setParams(defaultParams)
		}
		for _, s := range sessions {
			if s.task != held {
				continue
			}
			tools := s.tools()
			calls := make([]Call, len(s.calls))
			for i, c := range s.calls {
				calls[i] = Call{Tool: c.Tool, Failed: c.Failed}
			}
			half := &even
			if held%2 != 0 {
				half = &odd
			}
			for i, actual := range tools {
				pr := g.NextCalls(calls[:i], 3)
				if pr.Basis != BasisGraph {
					rep.PriorFallbacks++
				}
				graphTop := make([]string, len(pr.Suggestions))
				for j, sg := range pr.Suggestions {
					graphTop[j] = sg.Tool
				}
				msgTop := graphTop
				if ws := s.calls[i].Words; len(ws) > 0 {
					pm := g.predict(calls[:i], true, ws, 3)
					msgTop = make([]string, len(pm.Suggestions))
					for j, sg := range pm.Suggestions {
						msgTop[j] = sg.Tool
					}
				}
				prev := ""
				if i > 0 {
					prev = tools[i-1]
				}
				r := [4][]string{graphTop, base.frequency(3), base.bigram(prev, 3), msgTop}
				all.add(actual, r)
				half.add(actual, r)
				if i == 0 {
					rep.FirstCalls++
				} else {
					ctx.add(actual, r)
					if held%2 == 0 {
						evenCtx.add(actual, r)
					} else {
						oddCtx.add(actual, r)
					}
				}
			}
		}
	}
	rep.Accuracy, rep.WithContext = all.accuracy(), ctx.accuracy()
	rep.Tuning, rep.Held = even.accuracy(), odd.accuracy()
	rep.TuningWithContext, rep.HeldWithContext = evenCtx.accuracy(), oddCtx.accuracy()
	return rep
}

// hits counts top-1 and top-3 hits of the graph and the two baselines.
type hits struct {
	n          int
	top1, top3 [4]int
}

func (h *hits) add(actual string, ranked [4][]string) {
	h.n++
	for m, r := range ranked {
		for j, t := range r {
			if t != actual || j >= 3 {
				continue
			}
			h.top3[m]++
			if j == 0 {
				h.top1[m]++
			}
		}
	}
}

func (h *hits) accuracy() Accuracy {
	if h.n == 0 {
		return Accuracy{}
	}
	f := func(x int) float64 { return float64(x) / float64(h.n) }
	return Accuracy{
		Predictions:  h.n,
		NextToolTop1: f(h.top1[0]), NextToolTop3: f(h.top3[0]),
		BaselineFrequencyTop1: f(h.top1[1]), BaselineFrequencyTop3: f(h.top3[1]),
		BaselineBigramTop1: f(h.top1[2]), BaselineBigramTop3: f(h.top3[2]),
		MessageTop1: f(h.top1[3]), MessageTop3: f(h.top3[3]),
	}
}

// baselines are the frequency and bigram predictors, learned from raw
// tool sequences independently of the Graph code.
type baselines struct {
	freq   map[string]int
	bi     map[string]map[string]int
	order  []string            // by decreasing frequency, then name
	biTop  map[string][]string // successors by decreasing count, then name
	biFill map[string][]string // biTop filled up with order
}

func newBaselines() *baselines {
	return &baselines{freq: map[string]int{}, bi: map[string]map[string]int{}}
}

func (b *baselines) learn(tools []string) {
	for i, t := range tools {
		b.freq[t]++
		if i > 0 {
			m := b.bi[tools[i-1]]
			if m == nil {
				m = map[string]int{}
				b.bi[tools[i-1]] = m
			}
			m[t]++
		}
	}
}

func rankCounts(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

func (b *baselines) freeze() {
	b.order = rankCounts(b.freq)
	b.biTop = map[string][]string{}
	b.biFill = map[string][]string{}
	for prev, m := range b.bi {
		top := rankCounts(m)
		b.biTop[prev] = top
		seen := map[string]bool{}
		fill := append([]string{}, top...)
		for _, t := range top {
			seen[t] = true
		}
		for _, t := range b.order {
			if !seen[t] {
				fill = append(fill, t)
			}
		}
		b.biFill[prev] = fill
	}
}

// frequency is the frequency baseline's top k.
func (b *baselines) frequency(k int) []string { return b.order[:min(k, len(b.order))] }

// bigram is the bigram baseline's top k after prev ("" = no previous call).
func (b *baselines) bigram(prev string, k int) []string {
	if r, ok := b.biFill[prev]; ok {
		return r[:min(k, len(r))]
	}
	return b.frequency(k)
}
