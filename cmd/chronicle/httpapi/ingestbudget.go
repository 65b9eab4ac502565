package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultIngestBudget bounds the request bodies the API holds at once
// (32 MiB: eight bodies of MaxBodyBytes), over every route that reads
// one: POST /v1/events, POST /v1/memories and a memory's feedback, the
// workflow writes (POST /v1/workflows/{id}/…), POST /v1/workflows/suggest
// and its feedback, POST /v1/dags, a search's resume, a session's
// improve, and /mcp's POSTs (budgeted, which the router puts before
// every route but the GET ones). A body is held from before it is read
// until its answer, as parsing, validating and producing it take several
// times its size; a request is weighed by its Content-Length
// (MaxBodyBytes when it has none, a chunked body); a 32nd of the budget
// is kept for bodies of at most 64 KiB, so that they are not held back
// behind large ones (admitBody's Fairness), and another for bodies a
// cluster member read and sent on here while it keeps their room
// (BodyHeldHeader), so that two members never wait on each other. A body still arriving
// keeps its room until it has arrived or ReadTimeout cuts it (30 s): a
// caller with a write token that trickles bodies holds the others back
// that long, which the budget trades for bounded memory (room taken as
// bytes arrive instead lets many large bodies each hold a part and wait
// for the rest, none finishing). Before, nothing bounded them: a load
// walkthrough (2026-12-07) posting 3.9 MB batches from 16, 64 and 128
// clients at once took serve's RSS from 0.39 GB to 1.15, 2.2 and 3.7 GB,
// and at 128 the broker's acknowledgements took so long that 51 of 240
// requests were answered 503 (outcome unknown, so retried) after the
// 15 s publish timeout; with the budget, 128 such clients: 345 of 530
// requests 202, 185 429, none 503, at most 7.1 s, peak RSS 0.92 GB.
// Until 2026-12-07 only POST /v1/events was budgeted, so 128 clients
// could still hold 4 MiB each through the other routes.
const DefaultIngestBudget = 32 << 20

// DefaultIngestWait is how long a request with a body waits for room in
// the budget (5 s) before it answers 429 with Retry-After
// (IngestRetryAfter). While it waits its body is not read: the client's
// bytes stay in the socket's buffers, not in serve's memory.
const DefaultIngestWait = 5 * time.Second

// IngestRetryAfter is the Retry-After of the ingest budget's 429 (1 s).
const IngestRetryAfter = 1

// smallBody is the largest body that may take its room from the budget's
// reserve (64 KiB): a memory, a workflow update, a handful of events.
const smallBody = 64 << 10

// BodyHeldHeader marks a request a member sends on to the owner with a
// body it has read already and whose room it keeps in its own budget
// until the owner answers (forward): the owner weighs it against its
// budget's sent-on part, never waiting behind its own clients' bodies
// (admitBody). Only a member sends it; from a request without
// ForwardedHeader it is ignored, and removed from one that carries no
// member's signature where the token file names a member_secret.
const BodyHeldHeader = "Chronicle-Body-Held"

// ingestBudget is s's budget (IngestBudget, else DefaultIngestBudget),
// made at first use: main, of the budget less its two small parts, which
// every body waits for in order; the reserve (a 32nd of the budget, 1 MiB
// by default), which only a body of at most smallBody takes, and only
// when main has no room for it at once; and the sent-on part (a 32nd
// too), which only a body another member sends on holding its room there
// takes (BodyHeldHeader, admitBody). Main is 30 MiB by default, room for
// seven bodies of MaxBodyBytes at once, as before the sent-on part.
func (s *Server) ingestBudget() (main, reserve, sentOn *semaphore.Weighted, limit int64) {
	s.ingestOnce.Do(func() {
		s.ingestLimit = s.IngestBudget
		if s.ingestLimit <= 0 {
			s.ingestLimit = DefaultIngestBudget
		}
		s.ingestReserveSize = s.ingestLimit / 32
		s.ingestSem = semaphore.NewWeighted(s.ingestMainSize())
		s.ingestReserve = semaphore.NewWeighted(s.ingestReserveSize)
		s.ingestSentOn = semaphore.NewWeighted(s.ingestReserveSize)
	})
	return s.ingestSem, s.ingestReserve, s.ingestSentOn, s.ingestLimit
}

// ingestMainSize is the size of the budget's main part: the budget less
// its reserve and its sent-on part (ingestBudget).
func (s *Server) ingestMainSize() int64 { return s.ingestLimit - 2*s.ingestReserveSize }

// bodyHold is the room one request's body holds in the ingest budget.
type bodyHold struct {
	s    *Server
	sem  *semaphore.Weighted // the budget's main part or its reserve
	n    int64
	once sync.Once
}

// release gives the room back, once however often it is called.
func (h *bodyHold) release() {
	h.once.Do(func() {
		h.sem.Release(h.n)
		h.s.ingestHeld.Add(-h.n)
	})
}

// holdKey is the context key of a request's *bodyHold.
type holdKey struct{}

// heldBody is the body of a request admitted by budgeted: forward tells
// by it that the body has not been read nor replaced (releaseForwarded).
type heldBody struct {
	io.ReadCloser
	hold *bodyHold
}

// hasBody says whether r brings a body the budget weighs: not a GET or a
// HEAD (no route of theirs reads one), and a Content-Length above 0 or
// unknown (chunked).
func hasBody(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	return r.ContentLength != 0
}

// budgeted admits the requests of route pattern that bring a body
// (hasBody) to the ingest budget before h runs (admitBody), and gives
// their room back once h has answered. The router wraps every route with
// it but the GET ones, so a route that reads a body cannot miss it; a
// read-only server (chronicle inspect) reads none and has none. What is
// refused before a route runs (401, the DNS rebinding 403, a 404 or 405
// of no route, a malformed query's 400) takes no room and never waits;
// a route's own refusals come after the budget, a 415 for the media type
// included (before, POST /v1/events answered its 415 before the budget
// too): while the budget stays full such a request is a 429 first.
//
// A request within one that holds room already is not weighed again: the
// /mcp tools call the API in process (mcpAPI), with the /mcp request's
// context, so a memory_record's POST /v1/memories is part of its /mcp
// body's room; weighed twice, a budget full of /mcp requests would make
// each tool call wait on the others' room and answer 429 (a deadlock for
// IngestWait).
func (s *Server) budgeted(pattern string, h http.Handler) http.Handler {
	if s.ReadOnly || strings.HasPrefix(pattern, http.MethodGet+" ") {
		return h
	}
	s.metrics().budgetRefusals.WithLabelValues(pattern) // at 0 from the start
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBody(r) || r.Context().Value(holdKey{}) != nil {
			h.ServeHTTP(w, r)
			return
		}
		// a body another member read and sends on, holding its room there
		sentOn := r.Header.Get(ForwardedHeader) != "" && r.Header.Get(BodyHeldHeader) != ""
		hold, ok := s.admitBody(w, r, pattern, sentOn)
		if !ok {
			return
		}
		defer hold.release()
		r = r.WithContext(context.WithValue(r.Context(), holdKey{}, hold))
		r.Body = &heldBody{ReadCloser: r.Body, hold: hold}
		h.ServeHTTP(w, r)
	})
}

// releaseForwarded gives back the room of r's body when forward sends it
// to another member unread: httputil.ReverseProxy streams it from the
// client's connection to the owner's in 32 KiB pieces, so this member
// holds none of it, and the owner weighs it against its own budget when
// it arrives there (ForwardedHeader: an owner never forwards it again).
// Kept here too, the body would count twice, once on each member, and
// two members forwarding to each other under load would fill each
// other's budgets with requests neither holds, answering 429 for up to
// the forward timeout (25 s for a write).
//
// A body the route has read already (the policy routes, a fork, a
// workflow write sent on without ?scope=, POST /v1/events' late memory
// feedback, a /mcp tool call's request) is in this member's memory until
// the owner answers, so it keeps its room here (r.Body is no longer the
// heldBody), and held says so: forward marks the request
// (BodyHeldHeader) and the owner weighs it against its sent-on part, in
// which no body waits for room on another member. Before 2026-12-07 the
// owner weighed it against its main part, where its own clients' bodies
// sent on to this member the same way held room while waiting here: two
// members waited on each other until IngestWait, and answered 429 though
// each had room (TestIngestBudgetAcrossMembers: a policy feedback sent to
// each of two members, with room for one body each, for a policy the
// other owns: one or both were 429s after IngestWait; of 16 such
// requests and workflow writes at once, 14 and 16 in two runs).
func releaseForwarded(r *http.Request) (held bool) {
	if hb, ok := r.Body.(*heldBody); ok {
		hb.hold.release()
		return false
	}
	return r.Context().Value(holdKey{}) != nil
}

// admitBody takes room for r's body in the ingest budget, waiting at
// most IngestWait (DefaultIngestWait when ≤ 0). When there is no room by
// then it answers 429 with Retry-After, the error naming the budget,
// counts it in chronicle_ingest_budget_rejections_total under route, and
// returns false; the body is read and dropped first (at most
// MaxBodyBytes, within ReadTimeout), so the client gets the answer on a
// connection it can use again instead of a reset while it is still
// sending. Nothing of such a request is written: retrying it is safe.
//
// Fairness: semaphore.Weighted serves its waiters in order, so a body
// that does not fit yet holds back every smaller one behind it, even one
// that would fit. Measured (2026-12-07, embedded broker, 2 shared
// cores): with 2 MiB of the budget free behind one queued 4 MiB body, a
// 300-byte event waited 4.7 s; with 24 clients posting 3.9 MB batches
// for 20 s, single events sent one at a time among them were answered
// after 4.9 and 5.1 s at the median (two runs), and 3 of 8 were 429s,
// about the batches' odds (64 of 170). Not acceptable: an
// agent's memory or workflow update waited on bulk ingest it has nothing
// to do with. Decision: a small reserve, not an order of our own. A body
// of at most smallBody takes room in main when main has it at once
// (semaphore.TryAcquire, which never passes a waiter), else in the
// reserve when that has it, and only else waits in main's queue; a
// larger body waits in main's queue only. So small bodies pass a large
// waiter through the reserve alone, and can never take the room a large
// waiter is waiting for (letting them pass in main would starve a large
// body under a steady stream of small ones: a 429 every time); the
// budget as a whole still bounds every body. Its cost: a body above
// smallBody has a 32nd less room (31 MiB of 32: seven bodies of
// MaxBodyBytes at once, not eight; eight of the walkthrough's 3.9 MB;
// since the sent-on part, another 32nd less, 30 MiB: seven of either).
// With it, the same measurements: the event behind the queued 4 MiB body
// 202 after 17 ms; among the 24 clients' batches, 40 of 40 single events
// 202, at a median of 0.64 and 0.68 s (producing them on the busy
// machine) and at most 1.8 s, while the batches got 120 202s and 54
// 429s, as many as before (106 and 64) within the noise of a shared
// machine (TestIngestBudgetReserveLetsSmallBodiesPass).
//
// A body another member sent on holding its room there (sentOn:
// BodyHeldHeader) waits for the sent-on part alone, whatever its size.
// The bodies that hold that part are being processed here and wait on no
// other member's budget (an owner never sends a request on again), so
// such a wait always ends; in main, it could wait behind this member's
// own clients' bodies that hold room here while they wait for room on
// the sender (releaseForwarded), each member waiting on the other.
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request, route string, sentOn bool) (*bodyHold, bool) {
	sem, reserve, sentOnPart, limit := s.ingestBudget()
	n := r.ContentLength
	if n < 0 || n > MaxBodyBytes {
		n = MaxBodyBytes // unknown (chunked), or refused 413 once read to the limit
	}
	partSize := s.ingestMainSize()
	if sentOn {
		sem, partSize = sentOnPart, s.ingestReserveSize
	} else if n <= smallBody {
		for _, part := range []*semaphore.Weighted{sem, reserve} {
			if part.TryAcquire(n) {
				s.ingestHeld.Add(n)
				return &bodyHold{s: s, sem: part, n: n}, true
			}
		}
	}
	// a budget configured below MaxBodyBytes, or the sent-on part: a
	// request larger than the whole part waits for all of it
	// (semaphore.Weighted would block on it until the wait ends, a 429
	// every time)
	n = min(n, partSize)
	wait := s.IngestWait
	if wait <= 0 {
		wait = DefaultIngestWait
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	if err := sem.Acquire(ctx, n); err == nil {
		s.ingestHeld.Add(n)
		return &bodyHold{s: s, sem: sem, n: n}, true
	}
	if r.Context().Err() != nil {
		return nil, false // the client went away: no one to answer
	}
	s.metrics().budgetRefusals.WithLabelValues(route).Inc()
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	idx := -1 // the request's as a whole, as a body's 413
	reason := fmt.Sprintf("the server is busy: the request bodies it is processing hold its ingest budget of %d bytes (IngestBudget) and none was freed within %s; nothing was written: retry after %d s", limit, wait, IngestRetryAfter)
	w.Header().Set("Retry-After", strconv.Itoa(IngestRetryAfter))
	writeJSON(w, http.StatusTooManyRequests, errorBody{Error: "body: " + reason, Index: &idx, Pointer: "/", Reason: reason})
	return nil, false
}
