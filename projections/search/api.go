// Package search is memory search over the memory bank: the vector
// projection of memories (embedded index in Pebble by default), hybrid
// relevance (vector + BM25), scope weights, and the tool contract of the
// ReasoningBank design's MCP tools (memory_search, memory_record,
// memory_feedback).
package search

import (
	"context"
	"errors"
	"fmt"
)

// Scope filters of memory_search.
const (
	ScopeProject = "project"
	ScopeTeam    = "team"
	ScopeOrg     = "org"
	ScopeAll     = "all"
)

// Bounds of Query.Limit (the ReasoningBank tool schema's): an absent
// limit is DefaultLimit; a given one must be within 1..MaxLimit.
const (
	DefaultLimit = 5
	MaxLimit     = 20
)

// MaxQueryLength bounds Query.Text, in characters (Unicode code points, as
// JSON Schema's maxLength counts them); a longer query is ErrInvalid
// naming query. It is the bound of next_tool's text (8,192). Before, a
// query had no bound, and every hit's memory.retrieved.v1 carries the
// query: one search of 910,000 characters with 20 hits wrote about 18 MB
// to the log and to the memories' histories (a new user's walkthrough,
// 2026-12-03).
const MaxQueryLength = 8192

// Query is a memory_search call. Zero fields take the defaults of the
// ReasoningBank tool schema.
type Query struct {
	// Text is the query (required).
	Text string `json:"query"`
	// Scope to search: a kind (project, team, org or all; default all) or
	// one scope (project:<id>, team:<id>, org:<id>).
	Scope string `json:"scope,omitempty"`
	// Outcome filter: success, failure or all (default all).
	Outcome string `json:"outcome,omitempty"`
	// Limit of memories returned (0: DefaultLimit, else 1..MaxLimit).
	Limit int `json:"limit,omitempty"`
	// MinConfidence (default 0.5; 0 for coordination patterns with
	// outcome failure, whose confidence is a success rate below 0.5):
	// documents below it are left out.
	MinConfidence *float64 `json:"min_confidence,omitempty"`
	// Readable, when set, says which scopes (project:a, team:b, org:c) the
	// caller may read; others are invisible. nil: every scope.
	Readable func(scope string) bool `json:"-"`
	// Writable, when set, says which scopes the caller may write: a hit
	// in another scope is answered but writes no memory.retrieved event
	// (reading alone changes no state). nil: every hit writes its usage.
	Writable func(scope string) bool `json:"-"`
	// SessionID, when set, is recorded on the memory.retrieved events.
	SessionID string `json:"-"`
	// Source, when set, is who searches ("token:<name>", "mcp:<client>"),
	// recorded on the memory.retrieved events: usage counts distinct
	// sessions, else distinct sources.
	Source string `json:"-"`
	// ReadScopes, when set, are the scopes the searcher may read (its
	// token's read grants: concrete scopes, or "*" for every scope),
	// recorded on the memory.retrieved events as reader_scopes: the query
	// may carry anything the searcher read, so a memory's history shows it
	// only to a caller that reads every one of them (memories.Retrieval
	// QueryVisible). nil records none: the query is then shown only to
	// callers that read every scope and to the searcher.
	//
	// Index also partitions its query-vector cache by them (sorted, "*"
	// when they hold it): a search is a cache hit only on a text searched
	// before with the same read scopes, so its timing tells nothing of
	// what searchers of other scopes asked. A query with Readable set and
	// no ReadScopes is never cached; one with neither is cached with the
	// searchers that read every scope. Callers must set ReadScopes to
	// what Readable accepts.
	ReadScopes []string `json:"-"`
	// ExcludeSourceSession leaves out memories distilled from that session.
	ExcludeSourceSession string `json:"-"`
	// IDs, when set, admits only the documents whose id it accepts,
	// checked on the candidates before they are ranked (so relevance is
	// normalised and TotalFound counted over the admitted ones only); the
	// candidates are then asked of every document of the collection, so
	// an admitted one is found wherever it ranks among all of them (a
	// collection as small as the tools'; a large one costs a full scan).
	// GET /v1/tools/search's scope filter: the tools of that scope's tool
	// graph (a Tool document's own scope is ToolScope, every scope's).
	IDs func(id string) bool `json:"-"`
	// Collection searched ("": Memories). The memory_search tool always
	// searches memories; PAIR retrieval and the HTTP API also search
	// coordination patterns and tools, whose hits have the same shape.
	Collection Collection `json:"-"`
}

// Hit is one memory returned by a search.
type Hit struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Content     string  `json:"content"`
	Outcome     string  `json:"outcome"`
	Confidence  float64 `json:"confidence"`
	UsageCount  int     `json:"usage_count"`
	Relevance   float64 `json:"relevance"`
	Scope       string  `json:"scope"`
	// Tags and SourceSessions are not part of the memory_search tool's
	// answer; PAIR retrieval groups by tag.
	Tags           []string `json:"-"`
	SourceSessions []string `json:"-"`
	// Collection is the collection the hit came from (Query.Collection).
	Collection Collection `json:"-"`
}

// Result is memory_search's answer.
type Result struct {
	Memories []Hit `json:"memories"`
	// TotalFound counts the candidates with a positive relevance. The
	// candidates are the max(CandidatesPerQuery, 4 × limit) nearest by
	// vector and as many best by BM25, so on a collection larger than that
	// pool it is a lower bound of the matching entries, not their count.
	TotalFound int `json:"total_found"`
	// TokensUsed estimates the tokens the returned memories add to a
	// prompt (characters / 4).
	TokensUsed int `json:"tokens_used"`
	// UsageNotRecorded, when set, says why the search's usage events
	// (memory.retrieved.v1) were not written: the broker did not
	// acknowledge them within the usage wait. The hits are still the
	// projection's; only the memories' usage counts miss this search.
	UsageNotRecorded string `json:"usage_not_recorded,omitempty"`
}

// Record is a memory_record call: an explicit memory.
type Record struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Outcome     string   `json:"outcome"`
	Tags        []string `json:"tags,omitempty"`
	// Scope the memory is written to (project:<id>, team:<id>, org:<id>).
	Scope string `json:"-"`
	// Source is who records it ("token:<name>", "mcp:<client>"; may be
	// empty): memory.recorded.v1's recorded_by.
	Source string `json:"-"`
	// IdempotencyKey, when set, makes a retry of the call one recording:
	// the recording event's id is derived from it, the scope and Source,
	// so a retry with the same key and the same fields writes the same
	// event (a duplicate the memory bank drops) and is answered as the
	// first call was, while the same key with other fields is
	// ErrKeyReused. Empty: every call is a new recording, and a retry of
	// one whose answer was lost adds evidence twice. POST /v1/memories
	// takes it from the Idempotency-Key header.
	IdempotencyKey string `json:"-"`
	// Readable, when set, says which scopes the caller may read: when it
	// may not read Scope (a write-only token), the answer is Withheld.
	Readable func(scope string) bool `json:"-"`
}

// Recorded is memory_record's answer: the memory the recording is in once
// the memory bank applied it. A recording whose normalised title and
// content equal an existing memory's of the scope is merged into that
// memory (one more evidence, confidence unchanged), so ID, Confidence and
// InitialConfidence are then the existing memory's, not a new one's.
type Recorded struct {
	// ID is the memory's id (give it to memory_feedback): the existing
	// memory's when the recording was merged into it.
	ID string `json:"id" jsonschema:"id of the memory the recording is in (for memory_feedback): the existing memory's when it was merged into one"`
	// MergedInto is the id of the existing memory the recording was merged
	// into; empty when the recording created a new memory.
	MergedInto string `json:"merged_into,omitempty" jsonschema:"set when the recording was merged into an existing memory of equal title and content: that memory's id (a merge adds evidence and leaves its confidence as it was)"`
	Message    string `json:"message" jsonschema:"what happened, in words"`
	// Confidence is the memory's confidence when answered: the initial
	// one for a new memory, the existing memory's (a merge changes no
	// confidence) after a merge.
	// nil (left out) when the answer is Withheld: 0 is a real confidence.
	Confidence *float64 `json:"confidence,omitempty" jsonschema:"the memory's confidence now (a merge leaves the existing memory's as it was); absent when the caller may not read the scope (a write-only token)"`
	// InitialConfidence is the confidence the memory started at when it
	// entered the bank: 0.8 for an explicit memory this recording created;
	// after a merge, the existing memory's (0.7 or 0.6 for a distilled
	// one), whatever feedback and decay did since (see Confidence).
	// nil when Withheld.
	InitialConfidence *float64 `json:"initial_confidence,omitempty" jsonschema:"the confidence the memory started at: 0.8 for a new explicit memory; after a merge the existing memory's start, which feedback and decay may have moved since (see confidence); absent when the caller may not read the scope (a write-only token)"`
	// Evidence counts the recordings in the memory, this one included;
	// nil when Withheld.
	Evidence *int `json:"evidence,omitempty" jsonschema:"how many recordings the memory holds, this one included; absent when the caller may not read the scope (a write-only token)"`
	// Pruned: the memory is pruned (a merge into a pruned memory adds
	// evidence but searches do not return it).
	Pruned bool `json:"pruned,omitempty" jsonschema:"the memory is pruned: searches no longer return it, and the recording only adds evidence to its history"`
	// Withheld: the caller may not read the memory's scope, so the answer
	// holds only ID and Message — not MergedInto, Confidence,
	// InitialConfidence, Evidence nor Pruned, which would tell it whether
	// (and how often) the scope held the same title and content before;
	// POST /v1/memories and memory_record leave those members out (they
	// are nil or empty here, so the JSON form has none of them; before,
	// memory_record's typed answer read 0, a real confidence;
	// WithheldRecorded).
	Withheld bool `json:"-"`
}

// WithheldRecorded is the answer to a recording in scope by a caller that
// may not read scope (Recorded.Withheld).
func WithheldRecorded(id, scope string) Recorded {
	return Recorded{ID: id, Withheld: true, Message: "recorded in " + scope + "; this caller may not read " + scope + ", so the answer leaves out the memory's confidence and evidence and whether it was merged into an existing memory"}
}

// Feedback is a memory_feedback call.
type Feedback struct {
	MemoryID string `json:"memory_id"`
	// Scope is the memory's scope; empty: the one scope the caller may
	// write (and read, when Readable is set) that holds MemoryID
	// (ErrInvalid when several do), else DefaultScope (see Readable).
	Scope   string `json:"scope,omitempty"`
	Helpful bool   `json:"helpful"`
	Comment string `json:"comment,omitempty"`
	// Writable, when set, says which scopes the caller may write.
	Writable func(scope string) bool `json:"-"`
	// Source is who gives the signal ("token:<name>", "mcp:<client>"),
	// recorded on memory.feedback: two signals of one source never make
	// consensus.
	Source string `json:"-"`
	// SharedSource says that every caller of this server gives its
	// signals as Source (a server without API tokens: all are
	// "token:local"), so a signal waiting for consensus cannot get a second
	// source from them: the answer says so, and how to get one.
	SharedSource bool `json:"-"`
	// Readable, when set, says which scopes the caller may read: when it
	// may not read the memory's scope (a write-only token), the answer is
	// Withheld. A caller that sets it is answered without any look at the
	// scopes it may not read: Scope empty resolves among the scopes it
	// reads and writes, else goes to DefaultScope; a scope it writes but
	// may not read is written blind (the signal is appended without
	// looking whether the scope holds MemoryID), so the answer is the same
	// whether it does or not.
	Readable func(scope string) bool `json:"-"`
	// DefaultScope is the scope a signal without Scope goes to when no
	// scope the caller reads and writes holds MemoryID (the caller's
	// default write scope, where its recordings go); used only with
	// Readable, for a scope it may not read.
	DefaultScope string `json:"-"`
}

// FeedbackResult is memory_feedback's answer. NewConfidence is the value
// after the confidence processor applied the signal, or the unchanged
// value when the signal waits for consensus (Message says which).
type FeedbackResult struct {
	Success bool `json:"success" jsonschema:"the signal was recorded (false: not applied, the message says why)"`
	// NewConfidence is nil (left out) when the answer is Withheld: 0 is
	// a real confidence.
	NewConfidence *float64 `json:"new_confidence,omitempty" jsonschema:"the memory's confidence once the memory bank applied the signal, or unchanged while it waits for consensus (message says which); absent when the caller may not read the memory's scope (a write-only token)"`
	Message       string   `json:"message" jsonschema:"what happened, in words"`
	// Withheld: the caller may not read the memory's scope, so the answer
	// says only that the signal was recorded — not the confidence, nor
	// whether the signal applied, waits for consensus or met a pruned
	// memory; POST /v1/memories/{id}/feedback and memory_feedback leave
	// new_confidence out (nil here).
	Withheld bool `json:"-"`
}

// WithheldFeedback is the answer to a signal on a memory of scope by a
// caller that may not read scope (FeedbackResult.Withheld).
func WithheldFeedback(scope string) FeedbackResult {
	return FeedbackResult{Success: true, Withheld: true, Message: "signal recorded in " + scope + "; this caller may not read " + scope + ", so the answer leaves out the memory's confidence and whether the signal moved it"}
}

// Backend serves the three memory tools. The write path is always the log:
// Record and Feedback answer after the broker acknowledged the event, and
// Feedback after the memory bank applied it (bounded wait).
type Backend interface {
	Search(ctx context.Context, q Query) (Result, error)
	Record(ctx context.Context, r Record) (Recorded, error)
	Feedback(ctx context.Context, f Feedback) (FeedbackResult, error)
}

// ErrNotFound is returned (wrapped) for a memory the caller cannot see —
// absent, or in a scope it may not read: the two are indistinguishable.
var ErrNotFound = errorString("memory not found")

// ErrInvalid is returned (wrapped) for a call that breaks the tool schema;
// the message names the field and the reason.
var ErrInvalid = errorString("invalid argument")

// FieldError is an ErrInvalid that names the field by a JSON pointer
// into the call's arguments (the body of POST /v1/memories, the arguments
// of memory_record): "/tags/0". Its text is "invalid argument: <pointer>:
// <reason>".
type FieldError struct {
	Pointer string
	Reason  string
	// Err, when set, is a further sentinel the error wraps besides
	// ErrInvalid: events.ErrEventTooLarge for a recording whose event
	// would be above the limit of one event (POST /v1/memories answers
	// it 413, as it answers an oversized feedback).
	Err error
}

func (e *FieldError) Error() string {
	return string(ErrInvalid) + ": " + e.Pointer + ": " + e.Reason
}

// Unwrap returns ErrInvalid, and Err when set.
func (e *FieldError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}

// ArgError is an ErrInvalid naming an argument of a search (scope,
// outcome, limit, min_confidence): a query parameter of the HTTP search
// routes, an argument of memory_search. Its text is "invalid argument:
// <arg>: <reason>".
type ArgError struct {
	Arg    string
	Reason string
}

func (e *ArgError) Error() string { return string(ErrInvalid) + ": " + e.Arg + ": " + e.Reason }

// Unwrap returns ErrInvalid.
func (e *ArgError) Unwrap() error { return ErrInvalid }

// argErr is an ArgError for arg, its reason formatted.
func argErr(arg, format string, a ...any) error {
	return &ArgError{Arg: arg, Reason: fmt.Sprintf(format, a...)}
}

// ErrKeyReused is returned (wrapped) by Record for an IdempotencyKey that
// the caller already used, in the same scope, for a recording with other
// fields: a retry must send the same fields, a new recording a new key.
var ErrKeyReused = errorString("idempotency key already used for another recording")

// MaxIdempotencyKey is the longest Record.IdempotencyKey, in bytes.
const MaxIdempotencyKey = 255

// CheckIdempotencyKey says why key cannot be a Record.IdempotencyKey:
// empty, longer than MaxIdempotencyKey bytes, or holding a byte other than
// printable ASCII (what the Idempotency-Key header of
// draft-ietf-httpapi-idempotency-key-header can carry); nil when it can.
// The error names no field: the caller prefixes the header or argument.
func CheckIdempotencyKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty; send a unique key, e.g. a UUID, or none")
	case len(key) > MaxIdempotencyKey:
		return fmt.Errorf("%d bytes, longer than %d", len(key), MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("byte %d (0x%02x) is not printable ASCII", i, c)
		}
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }
