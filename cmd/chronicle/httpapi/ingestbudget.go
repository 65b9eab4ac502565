package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultIngestBudget bounds the request bodies POST /v1/events holds at
// once (32 MiB: eight bodies of MaxBodyBytes). A body is held from before
// it is read until its answer, as parsing, validating and producing it
// take several times its size; a request is weighed by its Content-Length
// (MaxBodyBytes when it has none, a chunked body). A body still arriving
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
const DefaultIngestBudget = 32 << 20

// DefaultIngestWait is how long POST /v1/events waits for room in the
// budget (5 s) before it answers 429 with Retry-After (IngestRetryAfter).
// While it waits its body is not read: the client's bytes stay in the
// socket's buffers, not in serve's memory.
const DefaultIngestWait = 5 * time.Second

// IngestRetryAfter is the Retry-After of POST /v1/events' 429 (1 s).
const IngestRetryAfter = 1

// ingestBudget is s's budget (IngestBudget, else DefaultIngestBudget),
// made at first use.
func (s *Server) ingestBudget() (*semaphore.Weighted, int64) {
	s.ingestOnce.Do(func() {
		s.ingestLimit = s.IngestBudget
		if s.ingestLimit <= 0 {
			s.ingestLimit = DefaultIngestBudget
		}
		s.ingestSem = semaphore.NewWeighted(s.ingestLimit)
	})
	return s.ingestSem, s.ingestLimit
}

// admitIngest takes room for r's body in the ingest budget, waiting at
// most IngestWait (DefaultIngestWait when ≤ 0), and returns the function
// that gives it back. When there is no room by then it answers 429 with
// Retry-After, the error naming the budget, and returns false; the body
// is read and dropped first (at most MaxBodyBytes, within ReadTimeout),
// so the client gets the answer on a connection it can use again instead
// of a reset while it is still sending. Nothing of such a request is
// written: retrying it is safe.
func (s *Server) admitIngest(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	sem, limit := s.ingestBudget()
	n := r.ContentLength
	if n < 0 || n > MaxBodyBytes {
		n = MaxBodyBytes // unknown (chunked), or refused 413 once read to the limit
	}
	if n == 0 {
		n = 1
	}
	// a budget configured below MaxBodyBytes: a request larger than the
	// whole budget waits for all of it (semaphore.Weighted would block on
	// it until the wait ends, a 429 every time)
	n = min(n, limit)
	wait := s.IngestWait
	if wait <= 0 {
		wait = DefaultIngestWait
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	if err := sem.Acquire(ctx, n); err == nil {
		return func() { sem.Release(n) }, true
	}
	if r.Context().Err() != nil {
		return nil, false // the client went away: no one to answer
	}
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	idx := -1 // the request's as a whole, as a body's 413
	reason := fmt.Sprintf("the server is busy: the request bodies it is processing hold its ingest budget of %d bytes (IngestBudget) and none was freed within %s; nothing was written: retry after %d s", limit, wait, IngestRetryAfter)
	w.Header().Set("Retry-After", strconv.Itoa(IngestRetryAfter))
	writeJSON(w, http.StatusTooManyRequests, errorBody{Error: "body: " + reason, Index: &idx, Pointer: "/", Reason: reason})
	return nil, false
}
