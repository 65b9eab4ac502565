// Package distill extracts reusable memories — strategies to follow and
// anti-patterns to avoid — from completed sessions (ReasoningBank design).
//
// Two extractors share one interface. Deterministic (the default, no
// network) builds memories from the session's trace and its FLUX
// evaluation. LLM asks any OpenAI-compatible chat-completions endpoint with
// the ReasoningBank prompt; its raw answer is written to the log
// (distillation.completed.v1) and parsed from there, so replay never calls
// the model again.
package distill

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

// Limits of a memory (ReasoningBank design).
const (
	MaxTitle       = 50  // characters
	MaxDescription = 200 // characters
	MaxMemories    = 3   // per session
)

// Initial confidences (ReasoningBank design).
const (
	InitialDistilledSuccess = 0.7
	InitialDistilledFailure = 0.6
	InitialExplicit         = 0.8
)

// Memory is one extracted memory, before it gets an id.
type Memory struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Tags        []string `json:"tags"`
	Outcome     string   `json:"outcome"` // success (strategy) | failure (anti-pattern)
}

// Session is what an extractor sees of a completed session.
type Session struct {
	Input      flux.Input
	Evaluation events.EvaluationData
	// Outcome is success when the evaluation meets the criteria, else
	// failure: Chronicle's own verdict, never the producer's reward.
	Outcome string
	// Summary is TaskSummary(Input.Task), computed once by NewSession for
	// every memory of the session; empty means it is computed where
	// needed.
	Summary string
}

// summary returns s.Summary, or computes it when s was built without
// NewSession.
func (s Session) summary() string {
	if s.Summary != "" {
		return s.Summary
	}
	return TaskSummary(s.Input.Task)
}

// NewSession builds the extractor's view of an evaluated session.
func NewSession(in flux.Input, ev events.EvaluationData) Session {
	o := events.OutcomeFailure
	if ev.Recommendation == events.MeetsCriteria {
		o = events.OutcomeSuccess
	}
	return Session{Input: in, Evaluation: ev, Outcome: o, Summary: TaskSummary(in.Task)}
}

// Normalize lower-cases s and folds runs of white space to one space, for
// duplicate detection.
func Normalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// MemoryID is the content address of a memory in a scope: "mem-" and the
// first 16 bytes of SHA-256(scope, normalised title, normalised content) in
// hex. Two memories with the same normalised title and content in the same
// scope get the same id, so the second adds evidence to the first instead
// of creating a duplicate.
func MemoryID(scope, title, content string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + Normalize(title) + "\x00" + Normalize(content)))
	return "mem-" + hex.EncodeToString(h[:16])
}

// Clip shortens s to at most n characters (runes), ending in "…" when cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// ClipWords shortens s to at most n characters (runes) as Clip does, but
// never inside a word: the cut falls on the last space, or just before the
// last "(", that leaves at least half of n, and a separator left dangling
// at the end (",", ";", ":", "+", "→", "(", "/", "=", "&", "|", "-", "–",
// "—") is dropped with the spaces before the "…". A string with no such
// break in its second half (one long token, an URL) is cut as Clip cuts
// it. Memory titles and descriptions and pattern titles are clipped so:
// "Strategy: update_reservation_flights + cancel_res…" read as a word of
// its own (a walkthrough's finding); now
// "Strategy: update_reservation_flights…". n < 2 is clipped as by Clip.
func ClipWords(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n || n < 2 {
		return Clip(s, n)
	}
	r := []rune(s)[:n-1] // room for "…"
	cut := -1
	for i := len(r) - 1; i >= n/2; i-- {
		if unicode.IsSpace(r[i]) || r[i] == '(' {
			cut = i
			break
		}
	}
	if cut < 0 {
		return Clip(s, n)
	}
	r = r[:cut]
	for len(r) > 0 && (unicode.IsSpace(r[len(r)-1]) || strings.ContainsRune(danglingSeparators, r[len(r)-1])) {
		r = r[:len(r)-1]
	}
	if len(r) == 0 {
		return Clip(s, n)
	}
	return string(r) + "…"
}

// danglingSeparators are the characters ClipWords drops from the end of a
// clipped string: what joins two parts and means nothing without the
// second.
const danglingSeparators = ",;:+→(/=&|-–—"

// Clamp makes m fit the limits: title ≤ 50, description ≤ 200 characters,
// each clipped at a word boundary (ClipWords).
func Clamp(m Memory) Memory {
	m.Title = ClipWords(m.Title, MaxTitle)
	m.Description = ClipWords(m.Description, MaxDescription)
	return m
}
