// Package judge scores `judge` criteria with a critic–judge loop over an
// OpenAI-compatible chat model (multi-signal evaluator design): a critic
// lists the session's flaws against the rubric, then a judge fills the
// rubric checklist with the critic's report in hand; the criterion's score
// is the share of checks passed. The raw answers go into the log
// (judge.completed.v1) and the sessions processor scores from there, so a
// replay never calls the model.
package judge

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// CriticPrompt asks for the flaws of a session against a rubric.
func CriticPrompt(task, trace string, rubric []string) string {
	return fmt.Sprintf(`You are a critic reviewing an AI agent's session.
Task: %s
Session:
%s
Rubric:
%s
List every flaw of the session that bears on the rubric, one per line starting with "- ", quoting the evidence. If there is none, answer NO_FLAWS.`, task, trace, bullets(rubric, "- "))
}

// JudgePrompt asks to fill the rubric checklist given the critic's report.
func JudgePrompt(task, trace string, rubric []string, critic string) string {
	return fmt.Sprintf(`You are a judge. Decide each check of the rubric for the agent session below, using the critic's report as evidence.
Task: %s
Session:
%s
Critic's report:
%s
Answer with the checklist only, one line per check in the same order, "- [x] <check>" when the session passes it and "- [ ] <check>" when it does not:
%s`, task, trace, critic, bullets(rubric, "- [ ] "))
}

func bullets(items []string, prefix string) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(prefix + it + "\n")
	}
	return b.String()
}

// Worker implements processors.Worker on chronicle.evaluations: for each
// evaluation with unevaluated judge criteria it runs the critic and the
// judge per criterion and publishes their answers.
//
// A criterion is asked once per question: each judge answer makes a new
// revision of the evaluation, which still lists the criteria not answered
// yet, so with two judge criteria the second was judged twice (from the
// evaluation at completion and from the revision the first answer made),
// the k-th k times, each a new revision. The worker remembers the last
// AskedMemory questions it published answers for, by session, criterion
// and critic prompt (task, trace and rubric), and skips one asked already;
// a trace that changed (a call after completion) is a new question. The
// memory is the process's: after a restart or a rebalance an evaluation
// redelivered may be judged again, costing model calls, not correctness
// (the sessions processor scores from whichever answer it applies last).
type Worker struct {
	Store    *projections.Store
	LLM      *distill.LLM
	Producer *events.Producer

	askedOnce sync.Once
	asked     *lru.Cache[[sha256.Size]byte, struct{}]
}

// AskedMemory is how many questions (session, criterion, critic prompt) a
// Worker remembers having published answers for.
const AskedMemory = 4096

// question is the key a criterion's question is remembered by.
func question(key, criterion, criticPrompt string) [sha256.Size]byte {
	return sha256.Sum256([]byte(key + "\x00" + criterion + "\x00" + criticPrompt))
}

// Name implements processors.Worker.
func (*Worker) Name() string { return "judge" }

// Topic implements processors.Worker.
func (*Worker) Topic() events.Topic { return events.TopicEvaluations }

// Handle implements processors.Worker. A model failure after its retries
// is returned: the evaluation goes to the dead-letter topic with the reason.
func (w *Worker) Handle(ctx context.Context, env *events.Envelope) error {
	var ev events.EvaluationData
	if err := env.Decode(&ev); err != nil {
		return err
	}
	pending := map[string]bool{}
	for _, id := range ev.Unevaluated {
		pending[id] = true
	}
	in, ok, err := sessions.Input(w.Store, events.EntityKey(env.EffectiveScope(), ev.SessionID))
	if err != nil || !ok {
		return fmt.Errorf("judge: session %s: not projected (%v)", ev.SessionID, err)
	}
	w.askedOnce.Do(func() { w.asked, _ = lru.New[[sha256.Size]byte, struct{}](AskedMemory) })
	key := events.EntityKey(env.EffectiveScope(), ev.SessionID)
	trace := distill.Trace(distill.Session{Input: in})
	n := 0
	for _, c := range in.Criteria {
		if c.Check.Kind != events.CheckJudge || !pending[c.ID] {
			continue
		}
		prompt := CriticPrompt(in.Task, trace, c.Check.Rubric)
		// taken before the calls, so a revision handled meanwhile skips
		// it too; given back when no answer is published, so a redrive of
		// the dead-lettered evaluation asks again
		q := question(key, c.ID, prompt)
		if taken, _ := w.asked.ContainsOrAdd(q, struct{}{}); taken {
			continue
		}
		if err := w.ask(ctx, env, ev.SessionID, in.Task, trace, prompt, c, n); err != nil {
			w.asked.Remove(q)
			return err
		}
		n++
	}
	return nil
}

// ask runs the critic and the judge on criterion c of session sessionID
// (its task and trace) and publishes their answers as the n-th
// judge.completed.v1 derived from env.
func (w *Worker) ask(ctx context.Context, env *events.Envelope, sessionID, task, trace, criticPrompt string, c events.Criterion, n int) error {
	critic, err := w.LLM.Complete(ctx, criticPrompt)
	if err != nil {
		return fmt.Errorf("judge: session %s, criterion %s: critic: %w", sessionID, c.ID, err)
	}
	verdict, err := w.LLM.Complete(ctx, JudgePrompt(task, trace, c.Check.Rubric, critic))
	if err != nil {
		return fmt.Errorf("judge: session %s, criterion %s: verdict: %w", sessionID, c.ID, err)
	}
	out, err := events.Derive(env, "chronicle/judge", events.JudgeCompleted, n, map[string]any{
		"session_id": sessionID, "criterion_id": c.ID, "model": w.LLM.Model(), "critic_raw": critic, "judge_raw": verdict,
	})
	if err != nil {
		return err
	}
	if err := w.Producer.PublishDerived(ctx, out); err != nil {
		// e.g. answers too large for one event: the dead letter names
		// the worker, the session and the model like a failed call's
		return fmt.Errorf("judge: session %s, criterion %s: model %s: answers of %d and %d bytes: %w", sessionID, c.ID, w.LLM.Model(), len(critic), len(verdict), err)
	}
	return nil
}
