// Package sessions is the processor that projects coordination sessions —
// their task, criteria, trace and outcome — and evaluates each completed
// session with the FLUX evaluator (package flux), emitting
// evaluation.completed.v1.
//
// Projection rows (under p/sessions/):
//
//	s/<key>                        Session (JSON, without its criteria)
//	c/<key>                        the session's success criteria (written once, at start)
//	t/<at>/<key>/<seq, 6 digits>   TraceItem (JSON), in log order; <at> is
//	                               Session.TraceAt, the log position of the
//	                               session's first event (t/<key>/<seq> when
//	                               empty: sessions recorded before it existed)
//	e/<key>                        events.EvaluationData (JSON)
//	o/<outcome>/<key>              index for listing by outcome (empty value)
//	j/<key>/<criterion id>         flux.Judged parsed from a judge.completed.v1
//	i/<session id>\x00<scope>      index from a bare id to the scopes that hold it (empty value)
//	d/<key>                        the session's task text (written once, at start)
//	ps/<key>                       the pattern that counted the session, and whether as a success
//
// The coordination patterns (pt/<pattern id>) are the patterns projection's
// (PatternsProcessor), fed through chronicle.patterns. Every row is one
// session's, so partitions are applied concurrently (StatePerKey). The s/
// row, rewritten by every event, holds the counters and short fields only;
// the task text and the criteria are written once.
//
// <key> is the session's events.EntityKey, scope "/" id: the same id in two
// scopes is two sessions, and no event of one scope reaches the other's.
package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "sessions"

// Session is the projected state of one session.
type Session struct {
	ID            string             `json:"id"`
	Scope         string             `json:"scope"`
	Task          string             `json:"task,omitempty"`
	Criteria      []events.Criterion `json:"criteria,omitempty"` // in the c/ row, not the s/ row
	Iteration     int                `json:"iteration,omitempty"`
	ParentSession string             `json:"parent_session,omitempty"`
	StartedAt     string             `json:"started_at,omitempty"`
	CompletedAt   string             `json:"completed_at,omitempty"`
	Status        string             `json:"status"` // running | completed
	Outcome       string             `json:"outcome,omitempty"`
	Reward        *float64           `json:"reward,omitempty"`
	Output        string             `json:"output,omitempty"`
	Events        int                `json:"events"`
	ToolCalls     int                `json:"tool_calls"`
	Minutes       int                `json:"minutes"`
	// TraceAt is where the session's t/ rows sit (traceAt: the log position
	// of its first event); empty for a session a store recorded before
	// this field existed, whose rows keep the t/<key>/ layout. Not part of
	// the query API's answer.
	TraceAt string `json:"trace_at,omitempty"`
	// recordedBy is who started the session (its d/ row's), read at
	// completion for the memories distilled from it.
	recordedBy string
}

// TraceItem is one event of a session's trace, as the evaluator sees it.
type TraceItem struct {
	ID   string          `json:"id"`
	Type events.Type     `json:"type"`
	Time string          `json:"time"`
	Data json.RawMessage `json:"data"`
}

// Session statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
)

// ErrNotStarted is the processing error of a completion for a session that
// was never started: there are no criteria to evaluate against, so the
// event goes to the dead-letter topic.
var ErrNotStarted = errors.New("session completed before it was started: no success criteria to evaluate")

// ErrAlreadyCompleted is the processing error of a second completion (with
// another event id) of the same session.
var ErrAlreadyCompleted = errors.New("session already completed")

// ErrAlreadyStarted is the processing error of a second start (with
// another event id) of the same session: it would replace the task and
// criteria the session was started, and maybe evaluated, with, so it goes
// to the dead-letter topic as a second completion does. Before, it was
// applied: a completed session read the second start's task and criteria,
// a started_at after its completed_at, and an evaluation of the first
// criteria (a new user's walkthrough, 2026-12-03). A retry of the same
// start keeps its event id and is a plain duplicate.
var ErrAlreadyStarted = errors.New("session already started: a second start (another event id) would replace its task and criteria; a session is started once")

// Processor is the sessions processor. On completion it evaluates the
// session and, unless LLMDistillation is set, distills 0–3 memories with
// the deterministic extractor and emits them as memory.recorded.v1
// (source distilled) for the memory bank.
type Processor struct {
	// LLMDistillation leaves distillation to the LLM distiller, which
	// writes the model's answer to the log (distillation.completed.v1).
	// Default false: the deterministic extractor runs here.
	LLMDistillation bool
}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }

// StatePerKey implements processors.KeyedState: every row is one session's.
func (Processor) StatePerKey() bool { return true }

func sessionKey(id string) string  { return "s/" + id }
func criteriaKey(id string) string { return "c/" + id }
func detailKey(id string) string   { return "d/" + id }

// detail is the d/ row: a session's cold text, written once at start so
// the s/ row every event rewrites stays small.
type detail struct {
	Task string `json:"task"`
	// RecordedBy is the start's recorded_by (who started the session),
	// absent when it has none, so such rows keep their bytes.
	RecordedBy string `json:"recorded_by,omitempty"`
}

// traceAt is a session's trace position: the log position of its first
// event, written as the session index writes positions in keys
// (<topic>/<partition, 6 digits>/<offset, 20 digits>), so that the trace
// rows of sessions started later in a partition sort later (one append
// point per partition). Events of a session arrive
// in bursts, so its t/ rows are written near the end of the t/ key range
// instead of all over it (session ids are random): Pebble's flushes then
// add sstables that overlap few older ones, and its compactions stop
// rewriting every older session's rows. Those rows are most of the
// projection's bytes; compaction was what made the cost per event grow
// with history (BenchmarkPerEventCost: 398 against 170 bytes compacted
// per event over 200,000 events, 1,238–1,295 against 425 over 600,000).
// It is a function of the log, so a replay writes the same keys.
func traceAt(pos projections.Position) string {
	return fmt.Sprintf("%s/%06d/%020d", pos.Topic, pos.Partition, max(pos.Offset, 0))
}

// traceKey is t/<at>/<key>/<projections.SeqKey(seq)> (seq ≥ 0: six
// digits, zero-padded, below 1,000,000), or t/<key>/<seq> when at is empty
// (sessions recorded before Session.TraceAt existed).
func traceKey(at, id string, seq int) string {
	b := make([]byte, 0, len(at)+len(id)+4+6)
	b = append(b, "t/"...)
	if at != "" {
		b = append(append(b, at...), '/')
	}
	b = append(append(b, id...), '/')
	return string(projections.AppendSeqKey(b, seq))
}

func evaluationKey(id string) string       { return "e/" + id }
func outcomeKey(outcome, id string) string { return "o/" + outcome + "/" + id }
func tracePrefix(s *Session) string {
	if s.TraceAt == "" {
		return "t/" + s.Key() + "/"
	}
	return "t/" + s.TraceAt + "/" + s.Key() + "/"
}

// ownTraceRow tells whether key, found under a session's trace prefix
// (tracePrefix, prefixLen bytes long), is one of that session's own trace
// rows: in the layout without a position, the prefix of session "p" also
// covers session "p/1"'s rows (ids may hold '/'), whose keys go on with a
// '/' after it; a sequence number never holds one.
func ownTraceRow(prefixLen int, key string) bool {
	return strings.IndexByte(key[prefixLen:], '/') < 0
}
func keyOf(env *events.Envelope) (string, error) { return events.Key(env) }

var idIndexKey = projections.IDIndexKey

// Key is the session's events.EntityKey (scope "/" id), the key of its rows.
func (s Session) Key() string { return events.EntityKey(s.Scope, s.ID) }

// Apply implements processors.Processor.
func (p Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	id, err := keyOf(env)
	if err != nil {
		return err
	}
	if env.Type == events.JudgeCompleted {
		return applyJudge(tx, env, id, p.LLMDistillation)
	}
	scope, bare, _ := events.SplitEntityKey(id)
	var s Session
	ok, err := tx.GetJSON(sessionKey(id), &s)
	if err != nil {
		return err
	}
	if !ok {
		s = Session{ID: bare, Scope: scope, Status: StatusRunning, TraceAt: traceAt(tx.Position())}
		if err := tx.Set(idIndexKey(bare, scope), nil); err != nil {
			return err
		}
	}
	switch env.Type {
	case events.SessionStarted:
		if s.StartedAt != "" {
			return fmt.Errorf("session %s: %w", id, ErrAlreadyStarted)
		}
		var d events.SessionStartedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		s.StartedAt = env.TimeUTC()
		s.Iteration, s.ParentSession = d.Iteration, d.ParentSession
		if err := tx.SetJSON(detailKey(id), detail{Task: d.OriginalTask, RecordedBy: d.RecordedBy}); err != nil {
			return err
		}
		if err := tx.SetJSON(criteriaKey(id), d.SuccessCriteria); err != nil {
			return err
		}
	case events.SessionCompleted:
		if s.StartedAt == "" {
			return fmt.Errorf("session %s: %w", id, ErrNotStarted)
		}
		if s.Status == StatusCompleted {
			return fmt.Errorf("session %s: %w", id, ErrAlreadyCompleted)
		}
		var d events.SessionCompletedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		s.Status, s.CompletedAt, s.Outcome, s.Reward, s.Output = StatusCompleted, env.TimeUTC(), d.Outcome, d.Reward, d.Output
		if err := tx.Set(outcomeKey(d.Outcome, id), nil); err != nil {
			return err
		}
	case events.MinuteRecorded:
		s.Minutes++
	case events.WorkflowTaskCompleted:
		s.ToolCalls++
	}
	row, err := traceRow(env)
	if err != nil {
		return err
	}
	if err := tx.Put(traceKey(s.TraceAt, id, s.Events), row); err != nil { // row is fresh
		return err
	}
	s.Events++
	if err := tx.SetJSON(sessionKey(id), s); err != nil {
		return err
	}
	if env.Type != events.SessionCompleted {
		if s.Status == StatusCompleted && (env.Type == events.WorkflowTaskCompleted || env.Type == events.MinuteRecorded) {
			// a call or minute that reached the log after the completion
			// (another producer, another thread, a redrive of a letter)
			// is in the trace: the evaluation is revised with it. Before,
			// it was counted and the evaluation kept saying the call was
			// never made (a Python integrator's walkthrough, 2026-12-01)
			if _, err := tx.GetJSON(criteriaKey(id), &s.Criteria); err != nil {
				return err
			}
			return revise(tx, &s, id, p.LLMDistillation)
		}
		return nil
	}
	if _, err := tx.GetJSON(criteriaKey(id), &s.Criteria); err != nil {
		return err
	}
	in, err := evaluatorInput(tx, &s)
	if err != nil {
		return err
	}
	ev := flux.Evaluate(in)
	if err := tx.SetJSON(evaluationKey(id), ev); err != nil {
		return err
	}
	if err := tx.Emit(events.EvaluationCompleted, ev); err != nil {
		return err
	}
	ds := distill.NewSession(in, ev) // the task summary computed once, for the pattern and the memories
	if err := countPattern(tx, &s, in, ev, ds.Summary); err != nil {
		return err
	}
	if p.LLMDistillation {
		return nil
	}
	return emitDistilled(tx, &s, ds)
}

// emitDistilled runs the deterministic extractor and emits each memory
// with its content address as id, so equal memories merge in the bank.
func emitDistilled(tx *projections.Tx, s *Session, ds distill.Session) error {
	mems, err := distill.Deterministic{}.Extract(context.Background(), ds)
	if err != nil {
		return err
	}
	for _, m := range mems {
		if err := tx.Emit(events.MemoryRecorded, events.MemoryRecordedData{
			MemoryID: distill.MemoryID(s.Scope, m.Title, m.Content), Title: m.Title, Description: m.Description,
			Content: m.Content, Outcome: m.Outcome, Tags: m.Tags, Source: "distilled", SourceSession: s.ID,
			RecordedBy: s.recordedBy, // the session's usages are its starter's (memories.usageAuthors)
		}); err != nil {
			return err
		}
	}
	return nil
}

// evaluatorInput builds what the evaluator may see from the projected
// trace: the task, the criteria, the output, the minutes and the tool
// calls — never the producer's outcome or reward.
func evaluatorInput(tx *projections.Tx, s *Session) (flux.Input, error) {
	var dt detail
	if _, err := tx.GetJSON(detailKey(s.Key()), &dt); err != nil {
		return flux.Input{}, err
	}
	s.Task, s.recordedBy = dt.Task, dt.RecordedBy
	in := flux.Input{SessionID: s.ID, Task: s.Task, Criteria: s.Criteria, Output: s.Output}
	prefix := tracePrefix(s)
	err := tx.Scan(prefix, func(key string, val []byte) (bool, error) {
		if !ownTraceRow(len(prefix), key) {
			return true, nil // another session's (layout without a position)
		}
		typ, data, err := traceTypeData(val)
		if err == nil {
			err = addToInput(&in, typ, data)
		}
		return err == nil, err
	})
	if err != nil {
		return in, err
	}
	// only a judge criterion reads its score (flux.Evaluate): a Get of its
	// row each, not two scans of the session's judged rows (two iterators
	// per completion, nearly always over nothing)
	for _, c := range s.Criteria {
		if c.Check.Kind != events.CheckJudge {
			continue
		}
		var j flux.Judged
		ok, err := tx.GetJSON(judgedKey(s.Key(), c.ID), &j)
		if err != nil {
			return in, err
		}
		if ok {
			if in.Judged == nil {
				in.Judged = map[string]flux.Judged{}
			}
			in.Judged[c.ID] = j
		}
	}
	return in, nil
}

// judgedKey is the row of a judge criterion's score: j/<key>/<criterion id>
// when the id holds no '/' (the layout such rows always had), else
// j/<key>\x00<criterion id> (an entity key never holds a 0 byte: ids are
// events.CheckID's characters). With '/' for every id, session "p" with
// criterion "x/tone" and session "p/x" with criterion "tone" shared one
// row, and session "p"'s evaluation read "p/x"'s judge answer as its own.
// A data directory that judged a criterion id with '/' before holds its
// row under the old name: rebuild it (replay --into) to score it again.
func judgedKey(key, criterionID string) string {
	if strings.Contains(criterionID, "/") {
		return "j/" + key + "\x00" + criterionID
	}
	return "j/" + key + "/" + criterionID
}

// applyJudge scores a judge criterion from the judge's answer in the log and
// re-evaluates the session (a new revision of its evaluation); at the
// revision that scores a not_evaluated session first (FirstScored) it
// distils the session as completion does (unless llmDistillation).
func applyJudge(tx *projections.Tx, env *events.Envelope, id string, llmDistillation bool) error {
	var d struct {
		CriterionID string `json:"criterion_id"`
		JudgeRaw    string `json:"judge_raw"`
	}
	if err := env.Decode(&d); err != nil {
		return err
	}
	var s Session
	ok, err := tx.GetJSON(sessionKey(id), &s)
	if err != nil {
		return err
	}
	if !ok || s.Status != StatusCompleted {
		return fmt.Errorf("session %s: judge answer before completion", id)
	}
	if _, err := tx.GetJSON(criteriaKey(id), &s.Criteria); err != nil {
		return err
	}
	var rubric []string
	for _, c := range s.Criteria {
		if c.ID == d.CriterionID && c.Check.Kind == events.CheckJudge {
			rubric = c.Check.Rubric
		}
	}
	// the member at fault is named, as the schema's refusals are: the
	// dead letter's pointer was empty, and its reason did not say which
	// member of the model's answer to read
	if rubric == nil {
		return &events.ValidationError{Index: -1, Pointer: "/data/criterion_id", Reason: fmt.Sprintf("session %s: %q is not a judge criterion", id, d.CriterionID)}
	}
	j, err := JudgeScore(rubric, d.JudgeRaw)
	if err != nil {
		return &events.ValidationError{Index: -1, Pointer: "/data/judge_raw", Reason: fmt.Sprintf("session %s, criterion %s: %v", id, d.CriterionID, err)}
	}
	if err := tx.SetJSON(judgedKey(id, d.CriterionID), j); err != nil {
		return err
	}
	return revise(tx, &s, id, llmDistillation)
}

// revise evaluates the completed session s (its criteria read) again, on
// its trace and judged criteria as the transaction sees them, and stores
// and emits the evaluation as the next revision (Revision + 1): after a
// judge's answer, and after a tool call or minute that reached the log
// after the completion. The first revision with a score of a session
// that was not_evaluated distils its memories (unless the LLM distils);
// a later revision distils nothing again: the memories of the earlier
// evaluation stay in the bank, and its feedback and decay judge them.
func revise(tx *projections.Tx, s *Session, id string, llmDistillation bool) error {
	var prev events.EvaluationData
	if _, err := tx.GetJSON(evaluationKey(id), &prev); err != nil {
		return err
	}
	in, err := evaluatorInput(tx, s)
	if err != nil {
		return err
	}
	ev := flux.Evaluate(in)
	ev.Revision = prev.Revision + 1
	// the first revision with a score: the session is evaluated now, and
	// what completion skipped for a not_evaluated session (PAIR's context,
	// the memories) follows from this evaluation
	// Stored without it: the row of a revision applied by a Chronicle
	// without the field would differ from its replay, and audit would
	// fail on every upgraded directory with such a session (an upgrade
	// walkthrough, 2026-11-30); the event carries it.
	if err := tx.SetJSON(evaluationKey(id), ev); err != nil {
		return err
	}
	ev.FirstScored = prev.Recommendation == events.NotEvaluated && ev.Recommendation != events.NotEvaluated
	ds := distill.NewSession(in, ev)
	if err := countPattern(tx, s, in, ev, ds.Summary); err != nil {
		return err
	}
	if err := tx.Emit(events.EvaluationCompleted, ev); err != nil {
		return err
	}
	if !ev.FirstScored || llmDistillation {
		return nil
	}
	return emitDistilled(tx, s, ds)
}

// inputFrom is the evaluator's input of s with its trace items.
func inputFrom(s *Session, items []TraceItem) (flux.Input, error) {
	in := flux.Input{SessionID: s.ID, Task: s.Task, Criteria: s.Criteria, Output: s.Output}
	for _, it := range items {
		if err := addToInput(&in, it.Type, it.Data); err != nil {
			return in, err
		}
	}
	return in, nil
}

// addToInput adds a trace item of type typ with data to in: a minute or a
// tool call (decoded: data may be reused after the call); other types are
// not the evaluator's.
func addToInput(in *flux.Input, typ events.Type, data []byte) error {
	switch typ {
	case events.MinuteRecorded:
		var m events.MinuteData
		if err := gojson.Unmarshal(data, &m); err != nil {
			return err
		}
		in.Minutes = append(in.Minutes, m)
	case events.WorkflowTaskCompleted:
		var c events.TaskCompletedData
		if err := gojson.Unmarshal(data, &c); err != nil {
			return err
		}
		in.Calls = append(in.Calls, c)
	}
	return nil
}

// traceTypeData returns the type and the data of a t/ row without decoding
// the data: traceRow writes the head's members (no data among them), then
// data, last; the first `,"data":` outside a string is that member's, and
// none is inside one (a quote in a string is escaped). A row of another
// shape, or with an escape in its head, is decoded as a TraceItem. The data
// aliases row.
func traceTypeData(row []byte) (events.Type, []byte, error) {
	if i := bytes.Index(row, []byte(`,"data":`)); i > 0 && row[len(row)-1] == '}' && bytes.IndexByte(row[:i], '\\') < 0 {
		if _, t, ok := bytes.Cut(row[:i], []byte(`"type":"`)); ok {
			if t, _, ok := bytes.Cut(t, []byte(`"`)); ok {
				return events.Type(t), row[i+len(`,"data":`) : len(row)-1], nil
			}
		}
	}
	var it TraceItem
	if err := gojson.Unmarshal(row, &it); err != nil {
		return "", nil, err
	}
	return it.Type, it.Data, nil
}

// traceRow is the t/ row of env: TraceItem's JSON with the event's data
// appended as consumed (it was validated on consume). Encoding the
// TraceItem with encoding/json would validate and compact the data again,
// which cost more than the rest of the processor's work on an event.
func traceRow(env *events.Envelope) ([]byte, error) {
	head, err := events.Marshal(struct {
		ID   string      `json:"id"`
		Type events.Type `json:"type"`
		Time string      `json:"time"`
	}{env.ID, env.Type, env.Time})
	if err != nil {
		return nil, err
	}
	row := make([]byte, 0, len(head)+len(env.Data)+9)
	row = append(row, head[:len(head)-1]...)
	row = append(row, `,"data":`...)
	row = append(row, bytes.TrimSpace(env.Data)...)
	return append(row, '}'), nil
}
