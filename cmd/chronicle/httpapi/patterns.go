package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// PatternConfidenceRule is how a coordination pattern's confidence is
// computed (sessions.Pattern.Confidence), as GET /v1/patterns/{id} and its
// history state it.
const PatternConfidenceRule = "(succeeded_count + 1) / (session_count + 2): Laplace's rule of succession over the sessions that followed the sequence"

// PatternView is the answer of GET /v1/patterns/{id}: the pattern row of
// the patterns projection with what its methods compute (title,
// confidence, outcome) and the rule that makes the confidence. Before,
// a pattern was seen only as a search hit, without its counts' origin (an
// analyst's walkthrough, 2026-12-07, could not tell why a pattern had
// confidence 0.667: one session that met its criteria, (1 + 1) / (1 + 2)).
type PatternView struct {
	ID             string   `json:"id"`
	Scope          string   `json:"scope"`
	Title          string   `json:"title"`
	Category       string   `json:"category"`
	Tools          []string `json:"tools,omitempty"`
	Steps          []string `json:"steps"`
	Task           string   `json:"task"`
	SessionCount   int      `json:"session_count"`
	SucceededCount int      `json:"succeeded_count"`
	Confidence     float64  `json:"confidence"`
	ConfidenceRule string   `json:"confidence_rule"`
	Outcome        string   `json:"outcome"`
	// Sessions and Succeeded are the last sessions.MaxPatternSessions
	// sessions that followed the sequence and those of them that meet
	// their criteria now.
	Sessions  []string `json:"sessions"`
	Succeeded []string `json:"succeeded"`
}

// patternView is p as GET /v1/patterns/{id} answers it.
func patternView(p sessions.Pattern) PatternView {
	v := PatternView{ID: p.ID, Scope: p.Scope, Title: p.Title(), Category: p.Category, Tools: p.Tools, Steps: p.Steps, Task: p.Task,
		SessionCount: p.SessionCount, SucceededCount: p.SucceededCount, Confidence: p.Confidence(), ConfidenceRule: PatternConfidenceRule,
		Outcome: p.Outcome(), Sessions: p.Sessions, Succeeded: p.Succeeded}
	if v.Steps == nil {
		v.Steps = []string{}
	}
	if v.Sessions == nil {
		v.Sessions = []string{}
	}
	if v.Succeeded == nil {
		v.Succeeded = []string{}
	}
	return v
}

// PatternHistory is the answer of GET /v1/patterns/{id}/history: a page of
// the pattern's coordination.pattern.counted.v1 records read back from
// chronicle.patterns, each with its log position and the counts and
// confidence after it, and the cursor of the next page ("" on the last).
type PatternHistory struct {
	PatternID      string  `json:"pattern_id"`
	Scope          string  `json:"scope"`
	SessionCount   int     `json:"session_count"`
	SucceededCount int     `json:"succeeded_count"`
	Confidence     float64 `json:"confidence"`
	ConfidenceRule string  `json:"confidence_rule"`
	// Records is the page; RecordCount counts every record of the
	// pattern in the log (on every page).
	Records     []sessions.PatternStep `json:"records"`
	RecordCount int                    `json:"record_count"`
	// Matches says whether the counts after the pattern's last record
	// are the pattern row's (false: a record was refused by the patterns
	// table, or the log and the projection are of different histories).
	Matches    bool   `json:"matches"`
	NextCursor string `json:"next_cursor"`
}

// patternRoutes serves GET /v1/patterns/{id} (the pattern) and GET
// /v1/patterns/{id}/history (the records that made its counts, from the
// log). Patterns are a global table, so every member answers from its own
// store, without forwarding. A pattern id is a content address of its
// scope and tool sequence, unique across scopes: the pattern's own scope
// must be one the caller reads, else the answer is the same 404 as for an
// id no pattern has (as every entity route answers another scope's).
func (s *Server) patternRoutes(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/patterns/"), "history")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	p, ok, err := sessions.GetPattern(s.P.Store, id)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	case !ok || !CallerOf(r).CanRead(p.Scope):
		entityNotFound(w, r, "pattern", id)
		return
	case suffix == "":
		writeJSON(w, http.StatusOK, patternView(p))
		return
	}
	from, limit, ok := historyPage(w, r, "a record number")
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), SessionEventsTimeout)
	defer cancel()
	steps, err := processors.Within(ctx, SessionEventsTimeout, "read the pattern's records", func(ctx context.Context) ([]sessions.PatternStep, error) {
		return sessions.PatternLog(ctx, s.brokers(), s.P.Store, p.Scope, p.ID)
	})
	if err != nil {
		if errors.Is(err, sessions.ErrNoPatternLog) {
			writeErr(w, http.StatusServiceUnavailable, "%s: %s reads the Kafka log, and inspect starts no broker: %v", ReadOnlyMessage, r.URL.Path, err)
			return
		}
		writeErr(w, http.StatusServiceUnavailable, "%v", events.ExplainBrokerError(err))
		return
	}
	v := PatternHistory{PatternID: p.ID, Scope: p.Scope, SessionCount: p.SessionCount, SucceededCount: p.SucceededCount,
		Confidence: p.Confidence(), ConfidenceRule: PatternConfidenceRule, RecordCount: len(steps), Records: []sessions.PatternStep{}}
	if n := len(steps); n > 0 {
		last := steps[n-1]
		v.Matches = last.SessionCount == p.SessionCount && last.SucceededCount == p.SucceededCount
	}
	size := 0
	for i := from; i < len(steps); i++ {
		b, _ := json.Marshal(steps[i])
		if len(v.Records) > 0 && (limit > 0 && len(v.Records) >= limit || size+len(b) > HistoryPageBytes) {
			v.NextCursor = strconv.Itoa(i)
			break
		}
		size += len(b)
		v.Records = append(v.Records, steps[i])
	}
	writeJSON(w, http.StatusOK, v)
}
