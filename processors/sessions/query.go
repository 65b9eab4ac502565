package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/projections"
)

// ErrNotEntityKey is the error of Get for a key that is not
// events.EntityKey(scope, id): a session is found by its scope and its id.
var ErrNotEntityKey = errors.New(`not a session key: want events.EntityKey(scope, id), e.g. "org:default/s1"`)

// View is a session with its evaluation, as the query API returns it.
type View struct {
	Session
	Evaluation *events.EvaluationData `json:"evaluation,omitempty"`
	// EvaluationLog ties Evaluation to its records in the log (see
	// EvaluationLogOf); set by GET /v1/sessions/{id} only, not by Get or
	// List.
	EvaluationLog *EvaluationLog `json:"evaluation_log,omitempty"`
}

// LogPosition is where one record sits in the log, and its event type.
type LogPosition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Position is "topic:partition:offset", as replay --until, the as-of
	// positions and GET /v1/sessions/{id}/events name records.
	Position string      `json:"position"`
	Type     events.Type `json:"type"`
}

// EvaluationLog is where a session's evaluation and its cause sit in the
// log, read from the session index (package sessionlog) and stored
// nowhere else: no projection row holds them, so a data directory applied
// by an older Chronicle answers them too, and a replay's rows are
// unchanged.
type EvaluationLog struct {
	// Record is the evaluation.completed.v1 record of the evaluation
	// answered (chronicle.evaluations, whose causationid names the event
	// that caused it): the last the index holds for the session, when it
	// holds at least revision + 1 of them (one per revision, in log order).
	// Absent while the log the index read holds fewer: the record of this
	// revision is not relayed yet, or not in an as-of state, which was cut
	// between the completion and the evaluation's record.
	Record *LogPosition `json:"record,omitempty"`
	// Completion is the session's completion (its first
	// coordination.session.completed.v1 after its first start, the one the
	// sessions processor applied; chronicle.sessions), from which the
	// evaluation was made: revision 0's cause. A later revision's own cause
	// (a judge's answer, a tool call or minute recorded after the
	// completion) is the Record's causationid.
	Completion *LogPosition `json:"completion,omitempty"`
}

// EvaluationLogOf is the EvaluationLog of the session with key
// (events.EntityKey) whose evaluation is ev, from the session index; nil
// when the index holds neither record (a directory older than the index).
// Cost: one scan of the session's index rows.
func EvaluationLogOf(store *projections.Store, key string, ev *events.EvaluationData) (*EvaluationLog, error) {
	if ev == nil {
		return nil, nil
	}
	byKind, err := sessionlog.Entries(store, key)
	if err != nil {
		return nil, err
	}
	var el EvaluationLog
	if evs := byKind[sessionlog.KindEvaluation]; len(evs) > ev.Revision {
		el.Record = logPosition(evs[len(evs)-1])
	}
	started := false
	for _, e := range byKind[sessionlog.KindEvent] { // one partition: log order
		switch {
		case e.Type == events.SessionStarted:
			started = true
		case e.Type == events.SessionCompleted && started:
			el.Completion = logPosition(e)
		}
		if el.Completion != nil {
			break
		}
	}
	if el.Record == nil && el.Completion == nil {
		return nil, nil
	}
	return &el, nil
}

func logPosition(e sessionlog.Entry) *LogPosition {
	return &LogPosition{Topic: e.Position.Topic, Partition: e.Position.Partition, Offset: e.Position.Offset, Position: e.Position.String(), Type: e.Type}
}

// Get returns the session whose events.EntityKey is key (scope "/" id) with
// its evaluation; ok is false when the projection has no such session. A
// key that is no entity key (a bare session id, without its scope) is an
// error wrapping ErrNotEntityKey: every session row is keyed by scope, so
// such a key was answered "not found" for a session that exists (a
// Go-package walkthrough).
func Get(store *projections.Store, key string) (View, bool, error) {
	var v View
	if _, _, ok := events.SplitEntityKey(key); !ok {
		return v, false, fmt.Errorf("sessions: %q: %w", key, ErrNotEntityKey)
	}
	ok, err := store.GetJSON(Name, sessionKey(key), &v.Session)
	if err != nil || !ok {
		return v, ok, err
	}
	v.TraceAt = "" // where its rows sit, not part of the answer
	if v.Task, err = task(store, key); err != nil {
		return v, true, err
	}
	if _, err := store.GetJSON(Name, criteriaKey(key), &v.Criteria); err != nil {
		return v, true, err
	}
	var ev events.EvaluationData
	has, err := store.GetJSON(Name, evaluationKey(key), &ev)
	if err != nil {
		return v, true, err
	}
	if has {
		v.Evaluation = &ev
	}
	return v, true, nil
}

// List returns up to limit sessions in key order (scope, then id) after
// cursor (a session key, exclusive),
// only those with the given outcome when outcome is not empty, and the
// cursor of the next page ("" at the end). allow, when not nil, filters
// sessions by scope (the caller's access rights).
func List(store *projections.Store, outcome string, limit int, cursor string, allow func(scope string) bool) ([]View, string, error) {
	prefix, strip := "s/", "s/"
	if outcome != "" {
		prefix = "o/" + outcome + "/"
		strip = prefix
	}
	after := ""
	if cursor != "" {
		after = strip + cursor
	}
	var out []View
	next := ""
	err := store.Scan(Name, prefix, after, func(key string, _ []byte) (bool, error) {
		id := strings.TrimPrefix(key, strip)
		v, ok, err := Get(store, id)
		if err != nil || !ok {
			return err == nil, err
		}
		if allow != nil && !allow(v.Scope) {
			return true, nil
		}
		if len(out) == limit {
			next = out[len(out)-1].Key()
			return false, nil
		}
		out = append(out, v)
		return true, nil
	})
	return out, next, err
}

// Scopes returns, sorted, the scopes that hold a session with the bare id
// (usually one; the same id in several scopes is several sessions).
func Scopes(store *projections.Store, id string) ([]string, error) { return store.ScopesOf(Name, id) }

// Trace returns the projected trace of the session with key in log order
// (none for an unknown session).
func Trace(store *projections.Store, key string) ([]TraceItem, error) {
	var s Session
	ok, err := store.GetJSON(Name, sessionKey(key), &s)
	if err != nil || !ok {
		return nil, err
	}
	return trace(store, &s)
}

// trace returns the trace rows of s in log order.
func trace(store *projections.Store, s *Session) ([]TraceItem, error) {
	var out []TraceItem
	prefix := tracePrefix(s)
	err := store.Scan(Name, prefix, "", func(key string, val []byte) (bool, error) {
		if !ownTraceRow(len(prefix), key) {
			return true, nil // another session's (layout without a position)
		}
		var it TraceItem
		if err := json.Unmarshal(val, &it); err != nil {
			return false, err
		}
		out = append(out, it)
		return true, nil
	})
	return out, err
}

// Stats summarise the projection for the demo.
type Stats struct {
	Sessions         int            `json:"sessions"`
	Completed        int            `json:"completed"`
	Events           int            `json:"events"`
	Successes        int            `json:"successes"`
	Failures         int            `json:"failures"`
	Evaluations      int            `json:"evaluations"`
	ByRecommendation map[string]int `json:"evaluations_by_recommendation"`
	// Agreement is the share of evaluated sessions with a producer reward
	// where (recommendation == meets_criteria) equals (reward == 1).
	Agreement float64 `json:"evaluation_agreement"`
	// Compared is how many sessions Agreement is computed over.
	Compared int `json:"agreement_sessions"`
}

// ComputeStats scans the whole projection.
func ComputeStats(store *projections.Store) (Stats, error) {
	st := Stats{ByRecommendation: map[string]int{}}
	agree := 0
	err := store.Scan(Name, "s/", "", func(key string, val []byte) (bool, error) {
		var s Session
		if err := json.Unmarshal(val, &s); err != nil {
			return false, err
		}
		st.Sessions++
		st.Events += s.Events
		switch s.Outcome {
		case events.OutcomeSuccess:
			st.Successes++
		case events.OutcomeFailure:
			st.Failures++
		}
		if s.Status == StatusCompleted {
			st.Completed++
		}
		var ev events.EvaluationData
		ok, err := store.GetJSON(Name, evaluationKey(s.Key()), &ev)
		if err != nil || !ok {
			return err == nil, err
		}
		st.Evaluations++
		st.ByRecommendation[ev.Recommendation]++
		if s.Reward != nil {
			st.Compared++
			if (ev.Recommendation == events.MeetsCriteria) == (*s.Reward == 1) {
				agree++
			}
		}
		return true, nil
	})
	if st.Compared > 0 {
		st.Agreement = float64(agree) / float64(st.Compared)
	}
	return st, err
}

// Input returns what the evaluator and the distillers may see of the
// session with key (events.EntityKey): task, criteria, output, minutes and tool calls (never the producer's
// outcome or reward); ok is false when the session is unknown.
func Input(store *projections.Store, key string) (flux.Input, bool, error) {
	var s Session
	ok, err := store.GetJSON(Name, sessionKey(key), &s)
	if err != nil || !ok {
		return flux.Input{}, ok, err
	}
	if s.Task, err = task(store, key); err != nil {
		return flux.Input{}, true, err
	}
	if _, err := store.GetJSON(Name, criteriaKey(key), &s.Criteria); err != nil {
		return flux.Input{}, true, err
	}
	items, err := trace(store, &s)
	if err != nil {
		return flux.Input{}, true, err
	}
	in, err := inputFrom(&s, items)
	return in, true, err
}

// RecordedBy is who started the session with key (its start's
// recorded_by: "token:<name>" when started over the HTTP API), "" when the
// start named nobody or the session is unknown. The LLM distiller carries
// it into distillation.completed.v1.
func RecordedBy(store *projections.Store, key string) (string, error) {
	var dt detail
	_, err := store.GetJSON(Name, detailKey(key), &dt)
	return dt.RecordedBy, err
}

// task is the task text of the session with key (its d/ row).
func task(store *projections.Store, key string) (string, error) {
	var dt detail
	_, err := store.GetJSON(Name, detailKey(key), &dt)
	return dt.Task, err
}
