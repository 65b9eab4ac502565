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

// Clamp makes m fit the limits: title ≤ 50, description ≤ 200 characters.
func Clamp(m Memory) Memory {
	m.Title = Clip(m.Title, MaxTitle)
	m.Description = Clip(m.Description, MaxDescription)
	return m
}
