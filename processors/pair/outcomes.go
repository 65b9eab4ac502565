package pair

import (
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// OutcomesName is the name of the Outcomes global table and its
// projection.
const OutcomesName = "outcomes"

// Outcome is a session's latest evaluation as the outcomes table keeps it
// (row o/<session key>): the composite and recommendation of every
// evaluated session, and the whole evaluation of one below PassComposite
// (a revision that fixes it needs its gaps and criteria).
type Outcome struct {
	Composite      float64 `json:"composite"`
	Recommendation string  `json:"recommendation"`
	// Revision is the evaluation's revision (0 at completion, +1 per judge
	// re-score); a lower revision never replaces a higher one.
	Revision int `json:"revision,omitempty"`
	// Evaluation is the evaluation itself when Composite < PassComposite;
	// nil otherwise (a passing session is only ever a success rate's
	// count).
	Evaluation *events.EvaluationData `json:"evaluation,omitempty"`
}

// Outcomes is the global table of session outcomes
// (processors.GlobalTable, Kafka Streams' GlobalKTable): every instance
// applies every partition of chronicle.evaluations and keeps each
// session's latest evaluation as an Outcome row. It is what the pair
// worker reads for sessions other than the one it handles — a revision's
// parent, the source sessions behind a memory's success rate — which on a
// cluster another instance projects (cross-key reads go through a table
// fed by a keyed topic, not through the local sessions projection). One
// row per evaluated session: about 60 bytes for a passing one, the
// evaluation's JSON (about 1 KiB) for one below PassComposite.
type Outcomes struct{}

// Name implements processors.Processor.
func (Outcomes) Name() string { return OutcomesName }

// Topics implements processors.Processor: chronicle.evaluations.
func (Outcomes) Topics() []events.Topic { return []events.Topic{events.TopicEvaluations} }

// Types implements processors.TypedProcessor.
func (Outcomes) Types() []events.Type { return []events.Type{events.EvaluationCompleted} }

// StatePerKey implements processors.KeyedState: a row is the state of one
// record key (the session).
func (Outcomes) StatePerKey() bool { return true }

// GlobalTable implements processors.GlobalTable: every instance keeps
// every session's outcome.
func (Outcomes) GlobalTable() bool { return true }

func outcomeKey(key string) string { return "o/" + key }

// Apply implements processors.Processor: the evaluation replaces the
// session's row unless the row holds a higher revision.
func (Outcomes) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.EvaluationCompleted {
		return nil
	}
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	var ev events.EvaluationData
	if err := env.Decode(&ev); err != nil {
		return err
	}
	var old Outcome
	ok, err := tx.GetJSON(outcomeKey(key), &old)
	if err != nil {
		return err
	}
	if ok && old.Revision > ev.Revision {
		return nil
	}
	o := Outcome{Composite: ev.Composite, Recommendation: ev.Recommendation, Revision: ev.Revision}
	if ev.Composite < PassComposite {
		o.Evaluation = &ev
	}
	return tx.SetJSON(outcomeKey(key), o)
}

// GetOutcome reads the outcome of the session whose events.EntityKey is key
// (scope "/" id); ok is false when the table holds none (not evaluated, or
// the table has not read its evaluation yet: see Worker.Fresh).
func GetOutcome(store *projections.Store, key string) (Outcome, bool, error) {
	var o Outcome
	ok, err := store.GetJSON(OutcomesName, outcomeKey(key), &o)
	return o, ok, err
}
