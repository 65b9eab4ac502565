package pair

import (
	"encoding/json"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// LoopName is the name of the PAIR loop processor and its projection.
const LoopName = "pairloop"

// LoopState is one session's state in the PAIR loop, a row of the
// pairloop projection: its latest evaluation's composite, the context PAIR
// retrieval wrote for it (pair.context.retrieved.v1) and the deterministic
// Revision built from that context. Status is a function of both, not of
// their order (the two come from different topics): SUCCESS when the
// composite is ≥ PassComposite, else MAX_ITERATIONS_REACHED when the
// context stopped the loop (iteration MaxIterations), REVISION_READY with
// a context, AWAITING_CONTEXT without; NOT_EVALUATED before all of these
// when the evaluation's recommendation is not_evaluated.
type LoopState struct {
	SessionID     string `json:"session_id"`
	Scope         string `json:"scope"`
	Iteration     int    `json:"iteration,omitempty"` // from the context; 0 until one arrives
	ParentSession string `json:"parent_session,omitempty"`
	Evaluated     bool   `json:"evaluated"`
	// NotEvaluated: the latest evaluation's recommendation is
	// not_evaluated (status NOT_EVALUATED).
	NotEvaluated bool      `json:"not_evaluated,omitempty"`
	Composite    float64   `json:"composite"`
	Status       string    `json:"status"`
	EvaluatedAt  string    `json:"evaluated_at,omitempty"`
	ContextAt    string    `json:"context_at,omitempty"`
	Context      *Context  `json:"context,omitempty"`
	Revision     *Revision `json:"revision,omitempty"`
	// LLMRevision is the LLM-written revision next to the deterministic
	// one (pair.revision.written.v1, only with an LLM configured): follow
	// it when its source is "llm"; with source "deterministic" the model's
	// answer was unusable and Revision stands (its fallback_reason says
	// why). Absent without an LLM, so the projection is then unchanged.
	LLMRevision *LLMRevision `json:"llm_revision,omitempty"`
}

// Loop is the PAIR loop processor: it reads evaluation.completed.v1
// (chronicle.evaluations), pair.context.retrieved.v1 and
// pair.revision.written.v1 (chronicle.learned), all keyed by the session,
// and keeps one LoopState row per session (l/<session key>). Other types
// on those topics are ignored. Deterministic: the revision is Revise of
// the context, the LLM revision InterpretRevision of the model's answer
// as the log holds it (no model call). The status does not depend on the
// LLM revision.
//
// While a session evaluated below PassComposite (revision 0) has no
// context, the row ev/<session key> keeps that evaluation event as it is
// in the log (its JSON encoding), so that POST /v1/sessions/{id}/improve
// can run PAIR retrieval for it through the worker's own code and derive
// the same event id (Worker.RetrieveNow). The context deletes the row; an
// evaluation that arrives after its context (the two topics are read
// independently) does not write it, so the final rows do not depend on
// the order of the two topics.
type Loop struct{}

// Name implements processors.Processor.
func (Loop) Name() string { return LoopName }

// Topics implements processors.Processor.
func (Loop) Topics() []events.Topic {
	return []events.Topic{events.TopicEvaluations, events.TopicLearned}
}

// Types implements processors.TypedProcessor: the types Apply acts on (the
// learned topic carries many others).
func (Loop) Types() []events.Type {
	return []events.Type{events.EvaluationCompleted, ContextRetrieved, RevisionWritten}
}

func loopKey(key string) string { return "l/" + key }

// evalKey is the row of a session's pending evaluation event.
func evalKey(key string) string { return "ev/" + key }

// Apply implements processors.Processor.
func (Loop) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.EvaluationCompleted && env.Type != ContextRetrieved && env.Type != RevisionWritten {
		return nil
	}
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	scope, id, _ := events.SplitEntityKey(key)
	var st LoopState
	if _, err := tx.GetJSON(loopKey(key), &st); err != nil {
		return err
	}
	st.SessionID, st.Scope = id, scope
	switch env.Type {
	case events.EvaluationCompleted:
		var ev events.EvaluationData
		if err := env.Decode(&ev); err != nil {
			return err
		}
		st.Evaluated, st.Composite, st.EvaluatedAt = true, ev.Composite, env.TimeUTC()
		st.NotEvaluated = ev.Recommendation == events.NotEvaluated
		// any revision below PassComposite of a session without a
		// context waits for one (a call that arrived after the completion
		// can take a session below 95: a re-test, 2026-12-01)
		if ev.Composite < PassComposite && st.Context == nil && !st.NotEvaluated {
			raw, err := json.Marshal(env)
			if err != nil {
				return err
			}
			if err := tx.Set(evalKey(key), raw); err != nil {
				return err
			}
		}
	case RevisionWritten:
		var d RevisionWrittenData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return &events.ValidationError{Index: -1, Pointer: "/data", Reason: err.Error()}
		}
		r := InterpretRevision(env, d)
		st.LLMRevision = &r
	default:
		var c Context
		if err := json.Unmarshal(env.Data, &c); err != nil {
			return &events.ValidationError{Index: -1, Pointer: "/data", Reason: err.Error()}
		}
		rev := Revise(c)
		st.Context, st.Revision, st.ContextAt = &c, &rev, env.TimeUTC()
		st.Iteration, st.ParentSession = c.Iteration, c.ParentSession
		if !st.Evaluated {
			st.Composite = c.Composite
		}
		if err := tx.Delete(evalKey(key)); err != nil {
			return err
		}
	}
	st.Status = loopStatus(st)
	return tx.SetJSON(loopKey(key), st)
}

func loopStatus(st LoopState) string {
	switch {
	case st.Evaluated && st.NotEvaluated:
		return LoopNotEvaluated
	case st.Evaluated && st.Composite >= PassComposite:
		return LoopSuccess
	case st.Context != nil && st.Context.Recommendation == StopIterationLimit:
		return LoopMaxIterations
	case st.Context != nil:
		return LoopRevisionReady
	default:
		return LoopAwaitingContext
	}
}

// GetLoop returns the LoopState of the session with key (scope "/" id).
func GetLoop(store *projections.Store, key string) (LoopState, bool, error) {
	var st LoopState
	ok, err := store.GetJSON(LoopName, loopKey(key), &st)
	return st, ok, err
}

// EvaluationEvent returns the evaluation.completed.v1 (revision 0, below
// PassComposite) of the session with key that the pairloop projection
// keeps while the session has no context; ok false when there is none
// (not evaluated yet, at or above PassComposite, or its context written).
func EvaluationEvent(store *projections.Store, key string) (env events.Envelope, ok bool, err error) {
	raw, ok, err := store.Get(LoopName, evalKey(key))
	if err != nil || !ok {
		return events.Envelope{}, false, err
	}
	if env, err = events.ParseEvent(raw); err != nil {
		return events.Envelope{}, false, fmt.Errorf("pair: stored evaluation of %s: %w", key, err)
	}
	return env, true, nil
}
