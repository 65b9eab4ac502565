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
// characters.
func (p Pattern) Title() string {
	names := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		if j := strings.IndexByte(s, '('); j >= 0 {
			s = s[:j]
		}
		names[i] = s
	}
	return distill.Clip("Pattern: "+strings.Join(names, " → "), 4*distill.MaxTitle)
}

func patternKey(id string) string        { return "pt/" + id }
func patternMemberKey(sid string) string { return "ps/" + sid }

// countPattern counts session s, just evaluated as ev from in, toward the
// pattern of its tool sequence. A re-evaluation (judge re-score) only
// updates whether it succeeded. A session without successful calls has no
// pattern. Cost: two row reads and writes, whatever the pattern's size.
func countPattern(tx *projections.Tx, s *Session, in flux.Input, ev events.EvaluationData) error {
	steps := distill.Steps(in.Calls)
	if len(steps) == 0 {
		return nil
	}
	id := PatternID(s.Scope, steps)
	var p Pattern
	ok, err := tx.GetJSON(patternKey(id), &p)
	if err != nil {
		return err
	}
	if !ok {
		p = Pattern{ID: id, Scope: s.Scope, Steps: steps, Category: CategoryReadOnly, Task: distill.TaskSummary(in.Task)}
		if tools := distill.WriteTools(in); len(tools) > 0 {
			p.Category, p.Tools = tools[0], tools
		}
	}
	var m patternMember
	counted, err := tx.GetJSON(patternMemberKey(s.Key()), &m)
	if err != nil {
		return err
	}
	met := ev.Recommendation == events.MeetsCriteria
	if counted && m.Met == met {
		return nil
	}
	if !counted {
		p.SessionCount++
		p.Sessions = lastN(append(p.Sessions, s.ID), MaxPatternSessions)
	}
	switch {
	case met:
		if p.SucceededCount == 0 {
			p.Task = distill.TaskSummary(in.Task)
		}
		p.SucceededCount++
		p.Succeeded = lastN(append(p.Succeeded, s.ID), MaxPatternSessions)
	case counted: // was a success, is no longer
		p.SucceededCount--
		if i := slices.Index(p.Succeeded, s.ID); i >= 0 {
			p.Succeeded = slices.Delete(p.Succeeded, i, i+1)
		}
	}
	if err := tx.SetJSON(patternMemberKey(s.Key()), patternMember{Pattern: id, Met: met}); err != nil {
		return err
	}
	return tx.SetJSON(patternKey(id), p)
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
	ok, err := store.GetJSON(Name, patternKey(id), &p)
	return p, ok, err
}

// EachPattern calls fn with every pattern in id order until fn returns
// false.
func EachPattern(store *projections.Store, fn func(Pattern) bool) error {
	return store.Scan(Name, "pt/", "", func(_ string, val []byte) (bool, error) {
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
