package sessions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/projections"
)

// Pattern is a coordination pattern (PAIR design: the "successful
// coordination sequences" PAIR retrieval searches beside success
// memories): the tool sequence of evaluated sessions in one scope — their
// successful calls as tool(argument names), consecutive repeats folded
// (distill.Steps) — with how many sessions followed it and how many of
// those met their criteria in their latest evaluation. Sessions with the
// same sequence in the same scope share one pattern, so its confidence is
// the sequence's observed success rate. It is a row of the sessions
// projection (pt/<id>), written in the same batch as the evaluation that
// counts the session, so replay rebuilds it exactly. The counts are
// exact; the row names only the last MaxPatternSessions sessions, so it
// stays small however common the sequence (each session's own row,
// ps/<session key>, says which pattern counted it and whether as a
// success).
type Pattern struct {
	// ID is PatternID(Scope, Steps).
	ID    string `json:"id"`
	Scope string `json:"scope"`
	// Category is the first database-writing tool the criteria of the
	// pattern's first session asked for (distill.WriteTools), or
	// CategoryReadOnly; PAIR groups retrieved patterns by it.
	Category string `json:"category"`
	// Tools are all those writing tools (the pattern's tags).
	Tools []string `json:"tools,omitempty"`
	// Steps are the calls in order, e.g. "get_user_details(user_id)",
	// "search_direct_flight(date, destination, origin) ×2".
	Steps []string `json:"steps"`
	// Task is the goal (distill.TaskSummary) of the first session that met
	// its criteria with this sequence, until one does the first session's.
	Task string `json:"task"`
	// SessionCount is the number of evaluated sessions that followed the
	// sequence; SucceededCount how many of them meet their criteria now
	// (a judge re-score can move a session either way).
	SessionCount   int `json:"session_count"`
	SucceededCount int `json:"succeeded_count"`
	// Sessions are the last MaxPatternSessions of those sessions, in the
	// order they were first evaluated; Succeeded those of them that meet
	// their criteria.
	Sessions  []string `json:"sessions"`
	Succeeded []string `json:"succeeded,omitempty"`
}

// MaxPatternSessions bounds Pattern.Sessions and Pattern.Succeeded.
const MaxPatternSessions = 100

// patternMember is the ps/<session key> row: the pattern that counted the
// session and whether as a success.
type patternMember struct {
	Pattern string `json:"pattern"`
	Met     bool   `json:"met"`
}

// CategoryReadOnly is the Category of a pattern whose session had no
// database write to make.
const CategoryReadOnly = "read_only"

// PatternPrefix starts every pattern id.
const PatternPrefix = "pat-"

// PatternID is the content address of a tool sequence in a scope:
// PatternPrefix and the first 16 bytes of SHA-256(scope, steps joined by
// newlines) in hex.
func PatternID(scope string, steps []string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + strings.Join(steps, "\n")))
	return PatternPrefix + hex.EncodeToString(h[:16])
}

// Confidence is the pattern's success rate with Laplace's rule of
// succession, (succeeded + 1) / (sessions + 2): 2/3 after one success, 1/3
// after one failure, tending to the observed rate as sessions accumulate.
// In (0, 1).
func (p Pattern) Confidence() float64 {
	return float64(p.SucceededCount+1) / float64(p.SessionCount+2)
}

// Outcome is success when at least one session met its criteria with the
// sequence, else failure.
func (p Pattern) Outcome() string {
	if p.SucceededCount > 0 {
		return events.OutcomeSuccess
	}
	return events.OutcomeFailure
}

// Title names the pattern by its tool chain: "Pattern: a → b → c" (tool
// names without arguments, repeats folded), at most distill.MaxTitle × 4
// characters, clipped after a whole tool name (distill.ClipWords).
func (p Pattern) Title() string {
	names := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		if j := strings.IndexByte(s, '('); j >= 0 {
			s = s[:j]
		}
		names[i] = s
	}
	return distill.ClipWords("Pattern: "+strings.Join(names, " → "), 4*distill.MaxTitle)
}

func patternKey(id string) string        { return "pt/" + id }
func patternMemberKey(sid string) string { return "ps/" + sid }

// PatternCountedData is the data of coordination.pattern.counted.v1.
type PatternCountedData struct {
	PatternID string   `json:"pattern_id"`
	SessionID string   `json:"session_id"`
	Steps     []string `json:"steps"`
	Category  string   `json:"category"`
	Tools     []string `json:"tools,omitempty"`
	// Task is the session's goal (distill.TaskSummary).
	Task string `json:"task"`
	// Met: the session meets its criteria in this evaluation; First: it is
	// counted for the first time; WasMet: it met them when last counted.
	Met    bool `json:"met"`
	First  bool `json:"first"`
	WasMet bool `json:"was_met"`
	// Left: the session leaves PatternID, where it was counted (Steps are
	// its new ones; Met and First are false): its tool sequence changed
	// after its completion (a call that came after it), so it is counted
	// in its new pattern instead (First there).
	Left bool `json:"left,omitempty"`
}

// countPattern records that session s, just evaluated as ev from in,
// follows the pattern of its tool sequence (its ps/ row, a row of the
// session's own key) and, when that is new or whether it met its criteria
// changed, emits coordination.pattern.counted.v1 keyed by the pattern: the
// patterns processor aggregates those in the order of chronicle.patterns,
// so the pattern rows do not depend on how session partitions interleave.
// A session without successful calls has no pattern. task is
// distill.TaskSummary(in.Task), the pattern's task.
func countPattern(tx *projections.Tx, s *Session, in flux.Input, ev events.EvaluationData, task string) error {
	steps := distill.Steps(in.Calls)
	if len(steps) == 0 {
		return nil
	}
	id := PatternID(s.Scope, steps)
	var m patternMember
	counted, err := tx.GetJSON(patternMemberKey(s.Key()), &m)
	if err != nil {
		return err
	}
	met := ev.Recommendation == events.MeetsCriteria
	moved := counted && m.Pattern != id
	if counted && !moved && m.Met == met {
		return nil
	}
	d := PatternCountedData{PatternID: id, SessionID: s.ID, Steps: steps, Category: CategoryReadOnly, Task: task,
		Met: met, First: !counted || moved, WasMet: counted && !moved && m.Met}
	if tools := distill.WriteTools(in); len(tools) > 0 {
		d.Category, d.Tools = tools[0], tools
	}
	if err := tx.SetJSON(patternMemberKey(s.Key()), patternMember{Pattern: id, Met: met}); err != nil {
		return err
	}
	if moved {
		// a call after the completion changed the tool sequence: the
		// session leaves the pattern it was counted in, then is counted
		// first in its new one. Before, it stayed counted in the old one
		// and was counted in the new one as a success without a session
		// (confidence (1+1)/(0+2) = 1, which pattern.changed refuses), so
		// the new pattern never appeared (a concurrency walkthrough,
		// 2026-12-03)
		left := d
		left.PatternID, left.Met, left.First, left.WasMet, left.Left = m.Pattern, false, false, m.Met, true
		if err := tx.Emit(events.PatternCounted, left); err != nil {
			return err
		}
	}
	return tx.Emit(events.PatternCounted, d)
}

// PatternsName is the name of the patterns processor and its projection.
const PatternsName = "patterns"

// PatternsProcessor projects the coordination patterns (pt/<pattern id>
// rows) from coordination.pattern.counted.v1 on chronicle.patterns. Its
// state is per pattern, the record key of its topic.
type PatternsProcessor struct{}

// Name implements processors.Processor.
func (PatternsProcessor) Name() string { return PatternsName }

// Topics implements processors.Processor.
func (PatternsProcessor) Topics() []events.Topic { return []events.Topic{events.TopicPatterns} }

// StatePerKey implements processors.KeyedState: one row per pattern.
func (PatternsProcessor) StatePerKey() bool { return true }

// GlobalTable implements processors.GlobalTable: every instance keeps every
// pattern (PAIR retrieval and pattern search read them for any session).
func (PatternsProcessor) GlobalTable() bool { return true }

// Apply implements processors.Processor: it counts the session toward the
// pattern (exact counts, the last MaxPatternSessions sessions named),
// moves it in or out of Succeeded as its verdict changed, and emits
// coordination.pattern.changed.v1 with the pattern as it now stands (to
// chronicle.learned, keyed by the pattern). Cost: one row read and write,
// whatever the pattern's size. The counting itself is CountPattern, which
// GET /v1/patterns/{id}/history folds over the pattern's records of the
// log to show each step.
func (PatternsProcessor) Apply(tx *projections.Tx, env *events.Envelope) error {
	if env.Type != events.PatternCounted {
		return nil
	}
	var d PatternCountedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	var p Pattern
	ok, err := tx.GetJSON(patternKey(d.PatternID), &p)
	if err != nil {
		return err
	}
	p, change := CountPattern(p, ok, env.EffectiveScope(), d)
	switch change {
	case PatternUnchanged:
		return nil
	case PatternRemoved:
		if err := tx.Delete(patternKey(d.PatternID)); err != nil {
			return err
		}
	default:
		if err := tx.SetJSON(patternKey(d.PatternID), p); err != nil {
			return err
		}
	}
	return tx.Emit(events.PatternChanged, events.PatternChangedData{
		PatternID: p.ID, Change: change, SessionID: d.SessionID, Steps: p.Steps, Category: p.Category, Tools: p.Tools,
		Task: p.Task, SessionCount: p.SessionCount, SucceededCount: p.SucceededCount, Confidence: p.Confidence(), Outcome: p.Outcome(),
	})
}

// The changes CountPattern makes (coordination.pattern.changed.v1's change;
// PatternUnchanged emits nothing).
const (
	PatternCreated   = "created"
	PatternUpdated   = "updated"
	PatternRemoved   = "removed"
	PatternUnchanged = ""
)

// CountPattern is pattern p (found: ok; the zero Pattern when not) after
// the coordination.pattern.counted.v1 d of scope, and the change:
// PatternCreated, PatternUpdated, PatternRemoved (d took out its last
// session: the row goes, counts 0) or PatternUnchanged (d took a session
// out of a pattern that is not there). A session counted first adds one
// to SessionCount; one that meets its criteria now and did not before (or
// is counted first) one to SucceededCount; one that met them and no
// longer does takes one off. It does not modify p's lists in place
// beyond what append and slices.Delete do to its own slices.
func CountPattern(p Pattern, ok bool, scope string, d PatternCountedData) (Pattern, string) {
	if d.Left {
		return leavePattern(p, ok, d)
	}
	change := PatternUpdated
	if !ok {
		p = Pattern{ID: d.PatternID, Scope: scope, Steps: d.Steps, Category: d.Category, Tools: d.Tools, Task: d.Task}
		change = PatternCreated
	}
	if d.First {
		p.SessionCount++
		p.Sessions = lastN(append(p.Sessions, d.SessionID), MaxPatternSessions)
	}
	switch {
	case d.Met && (d.First || !d.WasMet):
		if p.SucceededCount == 0 {
			p.Task = d.Task
		}
		p.SucceededCount++
		p.Succeeded = lastN(append(p.Succeeded, d.SessionID), MaxPatternSessions)
	case !d.Met && d.WasMet: // was a success, is no longer
		p.SucceededCount--
		if i := slices.Index(p.Succeeded, d.SessionID); i >= 0 {
			p.Succeeded = slices.Delete(p.Succeeded, i, i+1)
		}
	}
	return p, change
}

// leavePattern takes session d.SessionID out of pattern p (found: ok):
// one session fewer, one success fewer when it met its criteria there, and
// the pattern removed with its last session (PatternRemoved, counts 0). A
// pattern that is not there has nothing to take out (PatternUnchanged).
func leavePattern(p Pattern, ok bool, d PatternCountedData) (Pattern, string) {
	if !ok || p.SessionCount == 0 {
		return p, PatternUnchanged
	}
	p.SessionCount--
	if i := slices.Index(p.Sessions, d.SessionID); i >= 0 {
		p.Sessions = slices.Delete(p.Sessions, i, i+1)
	}
	if d.WasMet && p.SucceededCount > 0 {
		p.SucceededCount--
		if i := slices.Index(p.Succeeded, d.SessionID); i >= 0 {
			p.Succeeded = slices.Delete(p.Succeeded, i, i+1)
		}
	}
	if p.SessionCount == 0 {
		p.SucceededCount = 0
		return p, PatternRemoved
	}
	return p, PatternUpdated
}

// lastN is the last n elements of l.
func lastN(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return slices.Clone(l[len(l)-n:])
}

// GetPattern returns the pattern id; ok is false when there is none.
func GetPattern(store *projections.Store, id string) (Pattern, bool, error) {
	var p Pattern
	ok, err := store.GetJSON(PatternsName, patternKey(id), &p)
	return p, ok, err
}

// EachPattern calls fn with every pattern in id order until fn returns
// false.
func EachPattern(store *projections.Store, fn func(Pattern) bool) error {
	return store.Scan(PatternsName, "pt/", "", func(_ string, val []byte) (bool, error) {
		var p Pattern
		if err := json.Unmarshal(val, &p); err != nil {
			return false, err
		}
		return fn(p), nil
	})
}

// PatternIDOfKey is the pattern id of a row key of the projection ("" when
// the key is not a pattern row): the commit hook of the search index uses
// it to follow pattern changes.
func PatternIDOfKey(key string) string {
	if id, ok := strings.CutPrefix(key, "pt/"); ok {
		return id
	}
	return ""
}

// ApplyLocally applies env at pos with p and then every
// coordination.pattern.counted.v1 that emitted with PatternsProcessor, at
// the next offsets of partition 0 of chronicle.patterns: the two steps the
// pipeline takes through the log, for evaluations and tests that project
// sessions without a broker. Errors are Apply's.
func ApplyLocally(store *projections.Store, p Processor, pos projections.Position, env *events.Envelope) error {
	var emitted []projections.OutboxRecord
	if _, err := store.Apply(Name, pos, env, func(tx *projections.Tx, env *events.Envelope) error {
		err := p.Apply(tx, env)
		emitted = tx.Emitted()
		return err
	}); err != nil {
		return err
	}
	for _, rec := range emitted {
		if rec.Type != events.PatternCounted {
			continue
		}
		pc, err := events.ParseEvent(rec.Value)
		if err != nil {
			return err
		}
		next, _ := store.NextOffset(PatternsName, string(events.TopicPatterns), 0)
		if _, err := store.Apply(PatternsName, projections.Position{Topic: string(events.TopicPatterns), Offset: next}, &pc, PatternsProcessor{}.Apply); err != nil {
			return err
		}
	}
	return nil
}
