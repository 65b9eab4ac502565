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
	"fmt"
	"strings"

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
type Worker struct {
	Store    *projections.Store
	LLM      *distill.LLM
	Producer *events.Producer
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
	trace := distill.Trace(distill.Session{Input: in})
	n := 0
	for _, c := range in.Criteria {
		if c.Check.Kind != events.CheckJudge || !pending[c.ID] {
			continue
		}
		critic, err := w.LLM.Complete(ctx, CriticPrompt(in.Task, trace, c.Check.Rubric))
		if err != nil {
			return fmt.Errorf("judge: session %s, criterion %s: critic: %w", ev.SessionID, c.ID, err)
		}
		verdict, err := w.LLM.Complete(ctx, JudgePrompt(in.Task, trace, c.Check.Rubric, critic))
		if err != nil {
			return fmt.Errorf("judge: session %s, criterion %s: verdict: %w", ev.SessionID, c.ID, err)
		}
		out, err := events.Derive(env, "chronicle/judge", events.JudgeCompleted, n, map[string]any{
			"session_id": ev.SessionID, "criterion_id": c.ID, "model": w.LLM.Model(), "critic_raw": critic, "judge_raw": verdict,
		})
		if err != nil {
			return err
		}
		if err := w.Producer.PublishDerived(ctx, out); err != nil {
			// e.g. answers too large for one event: the dead letter names
			// the worker, the session and the model like a failed call's
			return fmt.Errorf("judge: session %s, criterion %s: model %s: answers of %d and %d bytes: %w", ev.SessionID, c.ID, w.LLM.Model(), len(critic), len(verdict), err)
		}
		n++
	}
	return nil
}
