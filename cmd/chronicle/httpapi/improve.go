package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// loopStep is one session of an improvement chain.
type loopStep struct {
	SessionID string `json:"session_id"`
	// ParentSession is the attempt this one revised ("" for the first).
	ParentSession string  `json:"parent_session,omitempty"`
	Iteration     int     `json:"iteration"`
	Composite     float64 `json:"composite"`
	Evaluated     bool    `json:"evaluated"`
	Status        string  `json:"status"`
}

// improvementView is the answer of GET /v1/sessions/{id}/improvement and
// POST /v1/sessions/{id}/improve: the session's LoopState (contexts per
// gap with their recommendation text, the revision) and its chain of
// attempts, first attempt first, with their scores.
type improvementView struct {
	pair.LoopState
	Chain []loopStep `json:"chain"`
	// Next says how to start the next attempt (absent when the loop is
	// over, or when a revision already met its criteria): its
	// coordination.session.started.v1 carries these.
	Next *nextAttempt `json:"next_attempt,omitempty"`
	// ImprovedBy is the revision of this session that met its criteria,
	// from the first pair_improvement_completed minute on this session.
	ImprovedBy *improvedBy `json:"improved_by,omitempty"`
}

type improvedBy struct {
	SessionID  string  `json:"session_id"`
	Iteration  int     `json:"iteration"`
	FinalScore float64 `json:"final_score"`
	MemoryID   string  `json:"memory_id"`
}

type nextAttempt struct {
	Iteration     int    `json:"iteration"`
	ParentSession string `json:"parent_session"`
}

// improvement builds the view of the session with key; ok false when the
// session is not projected. The chain follows parent_session through this
// instance's projections; a parent another member projects (a cluster
// partitions sessions) is asked for its own view with r's credentials
// (GET /v1/sessions/{parent}/improvement, remoteOwner/getFrom), whose
// chain comes first and whose first attempt's parent_session the walk
// goes on from. A member's request for such a view (chainHopHeader), and
// r nil, read local sessions only: the member that walks asks the
// others, never they each other.
func (s *Server) improvement(r *http.Request, key string) (improvementView, bool, error) {
	scope, id, _ := events.SplitEntityKey(key)
	v, ok, err := sessions.Get(s.P.Store, key)
	if err != nil || !ok {
		return improvementView{}, false, err
	}
	st, has, err := pair.GetLoop(s.P.Store, key)
	if err != nil {
		return improvementView{}, true, err
	}
	if !has {
		st = pair.LoopState{SessionID: id, Scope: scope, Status: pair.LoopAwaitingEvaluation}
		if v.Evaluation != nil {
			st.Status, st.Evaluated, st.Composite = pair.LoopAwaitingContext, true, v.Evaluation.Composite
			if v.Evaluation.Recommendation == events.NotEvaluated {
				st.Status, st.NotEvaluated = pair.LoopNotEvaluated, true
			}
		}
	}
	if st.Iteration == 0 {
		st.Iteration = max(1, v.Iteration)
	}
	view := improvementView{LoopState: st}
	// the chain: follow parent_session links, locally or through the
	// member that projects the parent (its own chain, as far as it
	// reaches), at most MaxIterations + a margin, each session once
	// (against cycles)
	seen := map[string]bool{}
	cur, curView, local := id, v, true
	for len(view.Chain) <= pair.MaxIterations+2 && cur != "" && !seen[cur] {
		var next string
		if local {
			// each step's status as the session's own view says it
			// (AWAITING_EVALUATION without an evaluation, IMPROVED once a
			// revision met the criteria): a step said "" and the other
			// REVISION_READY where the view said these (a walkthrough)
			step := loopStep{SessionID: cur, Iteration: max(1, curView.Iteration), ParentSession: curView.ParentSession, Status: pair.LoopAwaitingEvaluation}
			if ls, ok, err := pair.GetLoop(s.P.Store, events.EntityKey(scope, cur)); err == nil && ok {
				step.Composite, step.Evaluated, step.Status = ls.Composite, ls.Evaluated, ls.Status
			} else if curView.Evaluation != nil {
				step.Composite, step.Evaluated, step.Status = curView.Evaluation.Composite, true, pair.LoopAwaitingContext
				if curView.Evaluation.Recommendation == events.NotEvaluated {
					step.Status = pair.LoopNotEvaluated
				}
			}
			if step.Status != pair.LoopSuccess {
				if by, err := improvedByOf(s.P.Store, events.EntityKey(scope, cur)); err == nil && by != nil {
					step.Status = pair.LoopImproved
				}
			}
			seen[cur] = true
			view.Chain = append([]loopStep{step}, view.Chain...)
			next = curView.ParentSession
		} else {
			remote := s.remoteChain(r, scope, cur)
			for _, st := range remote {
				seen[st.SessionID] = true
			}
			if len(remote) == 0 || remote[len(remote)-1].SessionID != cur {
				break
			}
			view.Chain = append(remote, view.Chain...)
			next = remote[0].ParentSession
		}
		if cur = next; cur == "" {
			break
		}
		pv, ok, err := sessions.Get(s.P.Store, events.EntityKey(scope, cur))
		if err != nil {
			break
		}
		curView, local = pv, ok
	}
	if view.ImprovedBy, err = improvedByOf(s.P.Store, key); err != nil {
		return view, true, err
	}
	if st.Status == pair.LoopRevisionReady && st.Revision != nil && st.Revision.NextIteration > 0 && view.ImprovedBy == nil {
		view.Next = &nextAttempt{Iteration: st.Revision.NextIteration, ParentSession: id}
	}
	if view.ImprovedBy != nil && view.Status != pair.LoopSuccess {
		view.Status = pair.LoopImproved // the loop is over for this session: a revision met the criteria
	}
	return view, true, nil
}

// improvedByOf reads the first pair_improvement_completed minute of the
// pair worker in the session's trace (the minute belongs to the parent):
// nil when there is none.
func improvedByOf(store *projections.Store, key string) (*improvedBy, error) {
	trace, err := sessions.Trace(store, key)
	if err != nil {
		return nil, err
	}
	for _, it := range trace {
		if it.Type != events.MinuteRecorded {
			continue
		}
		var m events.MinuteData
		if json.Unmarshal(it.Data, &m) != nil || m.EventType != pair.ImprovementTag || m.Actor != pair.MinuteActor {
			continue
		}
		var d pair.ImprovementMinute
		if json.Unmarshal(m.Data, &d) != nil {
			continue
		}
		return &improvedBy{SessionID: d.ImprovedSession, Iteration: d.Iteration, FinalScore: d.FinalScore, MemoryID: d.MemoryID}, nil
	}
	return nil, nil
}

// chainHopHeader marks a member's request for a parent's improvement
// view (remoteChain): its answer walks local sessions only.
const chainHopHeader = "Chronicle-Chain-Hop"

// remoteChain is the chain of session id in scope as the member that
// projects it answers it, or nil (this instance is its owner, no member
// owns it, or the owner did not answer 200 within the forward timeout).
func (s *Server) remoteChain(r *http.Request, scope, id string) []loopStep {
	if r == nil || r.Header.Get(chainHopHeader) != "" {
		return nil // one hop per request: the member that asked walks on (against loops across members)
	}
	owner := s.remoteOwner(r.Context(), events.TopicSessions, events.EntityKey(scope, id))
	if owner == "" {
		return nil
	}
	code, body, err := s.getFrom(r.Context(), r, owner, "/v1/sessions/"+url.PathEscape(id)+"/improvement?scope="+url.QueryEscape(scope), chainHopHeader, "1")
	var v improvementView
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		return nil
	}
	return v.Chain
}

// sessionImprovement serves GET /v1/sessions/{id}/improvement.
func (s *Server) sessionImprovement(w http.ResponseWriter, r *http.Request, id string) {
	key, ok := entityKey(w, r, "session", id, sessions.Scopes, s.P.Store, CallerOf(r).CanRead, nil)
	if !ok {
		return
	}
	view, ok, err := s.improvement(r, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	case !ok:
		entityNotFound(w, r, "session", id)
	default:
		writeJSON(w, http.StatusOK, view)
	}
}

// DefaultImproveWait is how long POST /v1/sessions/{id}/improve waits, at
// most, for the loop to answer (Server.ImproveWait).
const DefaultImproveWait = 20 * time.Second

func (s *Server) improveWait() time.Duration {
	if s.ImproveWait > 0 {
		return s.ImproveWait
	}
	return DefaultImproveWait
}

// runsPAIR says whether this server's pipeline runs the pair worker.
func (s *Server) runsPAIR() bool {
	return slices.ContainsFunc(s.P.Workers, func(w processors.Worker) bool { return w.Name() == "pair" })
}

// improveSession serves POST /v1/sessions/{id}/improve: a producer asks
// for its next attempt. The loop runs on the log — the evaluation of a
// session below 95 makes PAIR retrieval write its context, and the
// pairloop processor the revision. When the session is evaluated below 95
// and has no context yet, the route starts the loop (startLoop): without a
// pair worker in this process (serve without PAIR, demo) it runs the
// retrieval itself, synchronously, through the worker's own code; with one
// it waits for the worker. Either way it waits at most ImproveWait
// (default 20 s) in all for the context to be projected. It answers 200
// with the revision and next_attempt (iteration, parent_session) when one
// is ready, or with the final status (SUCCESS, MAX_ITERATIONS_REACHED);
// 202 with the state AWAITING_EVALUATION when the session completed but
// its evaluation is not projected yet, AWAITING_CONTEXT when the wait ran
// out (a later POST or GET …/improvement finds the context; a retrieval
// cut short wrote nothing and runs again); 503 with Retry-After when the
// broker did not acknowledge the context the route published (its
// outcome unknown: asking again is safe); 409 at once for a session that
// has not completed (no evaluation will come before it does); 404 for an
// unknown session or one of a scope the caller may not write. The body is
// empty or {}: the route takes no field, so anything else is a 400 naming
// it, as on every other POST route.
func (s *Server) improveSession(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		err = bodyError(err)
		writeBodyErr(w, err, "")
		return
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if err := decodeBody(w, r, &struct{}{}); err != nil {
			writeBodyErr(w, err, " (this route takes no field: send no body or {})")
			return
		}
	}
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/sessions/"), "improve")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	if suffix != "improve" {
		writeErr(w, http.StatusNotFound, "POST /v1/sessions/{id}/improve is the only POST route under /v1/sessions/")
		return
	}
	// the route's answer is the PAIR view GET …/improvement reads: a
	// caller that may not read the session's scope gets that route's 404
	// (readsAndWrites), as the pair_improvement tool refuses it
	key, ok := entityKey(w, r, "session", id, sessions.Scopes, s.P.Store, readsAndWrites(r), nil)
	if !ok {
		return
	}
	// a session that has not completed has no evaluation to improve from,
	// and none is coming: a 409 saying so at once (it was a 202
	// AWAITING_CONTEXT, "evaluated below 95", with evaluated false;
	// found by an agent-runtime walkthrough)
	if v, found, err := sessions.Get(s.P.Store, key); err == nil && found && v.Evaluation == nil && v.Status != sessions.StatusCompleted {
		reason := "session not completed"
		if v.StartedAt == "" {
			reason = "session not started nor completed"
		}
		writeJSON(w, http.StatusConflict, errorBody{Reason: reason, Error: fmt.Sprintf("session %q has not completed (status %s, %d events, no %s): PAIR improves a session from its evaluation, which its completion brings; "+
			"complete it, then ask again", id, v.Status, v.Events, events.SessionCompleted)})
		return
	}
	view, ok, err := s.startLoop(r.Context(), r, key)
	switch {
	case writeRefused(w, err, "the improvement request was not written"):
	case errors.Is(err, events.ErrNotAcknowledged):
		// the broker away: the loop's request may still be written, and
		// asking again is safe (one loop per session); it was a 500 (a
		// review of a cluster walkthrough's outage, 2026-11-30)
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "the improvement request may still be written (its outcome is unknown): asking again is safe: %v", err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	case !ok:
		entityNotFound(w, r, "session", id)
	case view.Status == pair.LoopNotEvaluated:
		// nothing to improve from: a 409 saying why (it was revised as a
		// failure at composite 0: a walkthrough)
		writeJSON(w, http.StatusConflict, errorBody{Reason: "session not evaluated", Error: fmt.Sprintf("session %q was not evaluated (recommendation %s: no criterion with a weight could be scored, e.g. its only weighted criterion is a judge one and no LLM is configured): its composite is no evidence either way, so PAIR has nothing to revise from; give it criteria Chronicle can score, or configure an LLM for the judge", id, events.NotEvaluated)})
	case view.Status == pair.LoopAwaitingContext || view.Status == pair.LoopAwaitingEvaluation:
		if view.Evaluated && view.Composite < pair.PassComposite {
			// the wait ran out: a context that will never come (its
			// evaluation dead-lettered by the pair worker) is a 409
			// naming the letter, not a 202 forever
			if l, found := s.pairDeadLetter(r.Context(), key); found {
				writeJSON(w, http.StatusConflict, map[string]any{
					"error":       fmt.Sprintf("session %q: its evaluation was dead-lettered by %s (%s): no PAIR context will come until the cause is fixed and the letter re-driven (chronicle deadletter redrive --id %s)", id, l.Handler, l.Reason, l.ID),
					"dead_letter": l})
				return
			}
		}
		writeJSON(w, http.StatusAccepted, view)
	default:
		writeJSON(w, http.StatusOK, view)
	}
}

// DeadLetterLookupWait bounds reading the dead-letter topic when POST
// /v1/sessions/{id}/improve's wait ran out without a context (2 s); past
// it the route answers 202 as it would without the lookup.
const DeadLetterLookupWait = 2 * time.Second

// pairDeadLetter finds the latest letter of the pair worker
// (pair@chronicle.evaluations) for the evaluation of the session with key
// — a letter whose original key is key — reading the dead-letter topic for
// at most DeadLetterLookupWait. A letter re-driven since stays in the
// topic (it is append-only), but a re-driven evaluation that got its
// context no longer reaches this lookup (the route answers 200 first).
func (s *Server) pairDeadLetter(ctx context.Context, key string) (deadletter.Letter, bool) {
	ctx, cancel := context.WithTimeout(ctx, DeadLetterLookupWait)
	defer cancel()
	letters, err := deadletter.List(ctx, s.P.Broker.Addrs())
	if err != nil {
		return deadletter.Letter{}, false
	}
	var found deadletter.Letter
	ok := false
	for _, l := range letters {
		if l.Topic == string(events.TopicEvaluations) && l.Key == key && strings.HasPrefix(l.Handler, "pair@") {
			found, ok = l, true
		}
	}
	return found, ok
}

// retrieval is the improve route's PAIR retrieval of one session in
// flight: done is closed when it ends, err (read after done) is its
// error, nil when it published or had nothing to publish.
type retrieval struct {
	done chan struct{}
	err  error
}

// retrieve runs pair.Worker.RetrieveNow for the session with key, at most
// one per session at a time in this process: a request that finds one in
// flight waits for it (at most until ctx ends) and takes its outcome — a
// context it published, or the broker's ErrNotAcknowledged — rather than
// publishing a second; one cut short by its caller's deadline before it
// published is run again by the next request. Sessions do not wait for
// each other. Before, one lock served every session, so during a broker
// outage each request queued behind the others' publish timeouts, and the
// later ones ran out of ImproveWait in the queue and were answered 202
// AWAITING_CONTEXT for a context nobody was writing.
func (s *Server) retrieve(ctx context.Context, key string) error {
	for {
		s.pairMu.Lock()
		if s.pairSent[key] {
			s.pairMu.Unlock()
			return nil
		}
		if cur := s.pairBusy[key]; cur != nil {
			s.pairMu.Unlock()
			select {
			case <-cur.done:
				if cur.err == nil || errors.Is(cur.err, events.ErrNotAcknowledged) {
					return cur.err
				}
				continue // cut short, or failed otherwise: try again
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		rt := &retrieval{done: make(chan struct{})}
		if s.pairBusy == nil {
			s.pairBusy = map[string]*retrieval{}
		}
		s.pairBusy[key] = rt
		s.pairMu.Unlock()

		wk := &pair.Worker{Store: s.P.Store, Index: s.P.Search.Index, Producer: s.P.Producer, Fresh: s.P.OutcomesFresh()}
		sent, err := wk.RetrieveNow(ctx, key)
		s.pairMu.Lock()
		if err == nil && sent {
			s.markPairSent(key)
		}
		delete(s.pairBusy, key)
		rt.err = err
		close(rt.done)
		s.pairMu.Unlock()
		return err
	}
}

// maxPairSent bounds Server.pairSent: past it, markPairSent forgets one
// session (an arbitrary one) for each it adds. Forgetting is safe: the
// set only spares a second retrieval between a context's publish and its
// apply, after which RetrieveNow finds no pending evaluation and writes
// nothing; and a second publish carries the same derived id, which the
// processors apply once. Before 2026-12-07 the set kept every session a
// process had improved, for its life.
const maxPairSent = 4096

// markPairSent records, under pairMu, that this process published the
// PAIR context of the session with key.
func (s *Server) markPairSent(key string) {
	if s.pairSent == nil {
		s.pairSent = map[string]bool{}
	}
	if len(s.pairSent) >= maxPairSent && !s.pairSent[key] {
		for k := range s.pairSent {
			delete(s.pairSent, k)
			break
		}
	}
	s.pairSent[key] = true
}

// startLoop is the improve action on the session with key: its view, after
// starting PAIR retrieval when the session is evaluated below
// PassComposite without a context. Without a pair worker in the pipeline
// it runs the retrieval itself (retrieve: pair.Worker.RetrieveNow, the
// same retrieval and derived event id as the worker, so a later worker
// run writes nothing), once per session per process, so two concurrent
// requests never publish two contexts; then it polls the pairloop
// projection until the context is applied or ImproveWait has passed since
// the call. A publish the broker did not acknowledge is the error
// (events.ErrNotAcknowledged: the route's 503), also when the deadline
// cut it: the record may still be written, and asking again is safe. A
// retrieval that ran out of time before publishing wrote nothing, and the
// route answers the view (202 AWAITING_CONTEXT); the next request runs it
// again.
func (s *Server) startLoop(ctx context.Context, r *http.Request, key string) (improvementView, bool, error) {
	view, ok, err := s.improvement(r, key)
	if err != nil || !ok || view.Status != pair.LoopAwaitingContext || !view.Evaluated || view.Composite >= pair.PassComposite {
		return view, ok, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.improveWait())
	defer cancel()
	if !s.runsPAIR() && s.P.Search != nil && s.P.Search.Index != nil {
		err := s.retrieve(ctx, key)
		switch {
		case errors.Is(err, events.ErrNotAcknowledged):
			return view, true, err
		case err != nil && ctx.Err() != nil:
			// out of time before publishing: nothing written, the view
			// below (202)
		case err != nil:
			return view, true, err
		}
	}
	for {
		// polled locally (the loop rows are this member's); the answer,
		// once, with the chain's remote part
		v, ok, err := s.improvement(nil, key)
		if err != nil || !ok {
			return v, ok, err
		}
		if v.Status != pair.LoopAwaitingContext {
			return s.improvement(r, key)
		}
		select {
		case <-ctx.Done():
			return s.improvement(r, key)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
