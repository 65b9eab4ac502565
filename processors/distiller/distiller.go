// Package distiller is the LLM distillation worker (ReasoningBank design):
// for each evaluated session it sends the ReasoningBank prompt to an
// OpenAI-compatible chat model and writes the raw answer to the log as
// distillation.completed.v1. The memory bank parses that answer from the
// log, so a replay rebuilds the same memories without calling the model.
package distiller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// Worker implements processors.Worker on chronicle.evaluations.
type Worker struct {
	Store    *projections.Store
	LLM      *distill.LLM
	Producer *events.Producer
}

// Name implements processors.Worker.
func (*Worker) Name() string { return "distiller" }

// Topic implements processors.Worker.
func (*Worker) Topic() events.Topic { return events.TopicEvaluations }

// Handle implements processors.Worker: it reads the session's trace from
// the sessions projection (written before the evaluation was emitted), asks
// the model (3 attempts, backoff from 1 s, rate-limited; see distill.LLM)
// and publishes the answer. A model failure after its retries is returned:
// the evaluation event goes to the dead-letter topic with the reason.
func (w *Worker) Handle(ctx context.Context, env *events.Envelope) error {
	var ev events.EvaluationData
	if err := env.Decode(&ev); err != nil {
		return err
	}
	if ev.Revision > 0 && !ev.FirstScored {
		return nil // a judge re-scored the session; it was distilled at revision 0 (or at its first score)
	}
	if ev.Recommendation == events.NotEvaluated {
		// nothing to tell success from failure, as for the deterministic
		// extractor (distill.Deterministic); it is distilled at the judge
		// revision that scores it (FirstScored). Before, the model was
		// asked to distil it as a failure at composite 0.
		return nil
	}
	in, ok, err := sessions.Input(w.Store, events.EntityKey(env.EffectiveScope(), ev.SessionID))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("distiller: session %s is not in the sessions projection", ev.SessionID)
	}
	ds := distill.NewSession(in, ev)
	prompt := distill.RenderPrompt(ds.Outcome, distill.Trace(ds))
	raw, err := w.LLM.Complete(ctx, prompt)
	if err != nil {
		return fmt.Errorf("distiller: session %s: %w", ev.SessionID, err)
	}
	sum := sha256.Sum256([]byte(prompt))
	data := map[string]any{
		"session_id": ev.SessionID, "extractor": "llm", "model": w.LLM.Model(), "outcome": ds.Outcome,
		"prompt_sha256": hex.EncodeToString(sum[:]), "raw_response": raw,
	}
	// who started the session: its memories' merges are that caller's
	// usages (memories.usageAuthors), as on the deterministic path
	by, err := sessions.RecordedBy(w.Store, events.EntityKey(env.EffectiveScope(), ev.SessionID))
	if err != nil {
		return err
	}
	if by != "" {
		data["recorded_by"] = by
	}
	out, err := events.Derive(env, "chronicle/distiller", events.DistillationCompleted, 0, data)
	if err != nil {
		return err
	}
	if err := w.Producer.PublishDerived(ctx, out); err != nil {
		// e.g. an answer too large for one event: the dead letter names
		// the worker, the session and the model like a failed call's
		return fmt.Errorf("distiller: session %s: model %s: answer of %d bytes: %w", ev.SessionID, w.LLM.Model(), len(raw), err)
	}
	return nil
}
