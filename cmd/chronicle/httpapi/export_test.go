package httpapi

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// ScanSessionEvents makes GET /v1/sessions/{id}/events read every session
// by the scan (as a data directory older than the sessionlog index does)
// until the returned function is called.
func ScanSessionEvents() (restore func()) {
	scanOnly.Store(true)
	return func() { scanOnly.Store(false) }
}

// HoldIngestBudget takes n bytes of s's ingest budget (at most its size),
// as bodies being read would hold them, until the returned function is
// called: a test holds the budget without racing requests for it. The
// part for bodies another member sent on (BodyHeldHeader) is taken
// first, then the main part, then the reserve for small bodies: a test
// that leaves some room leaves it in the reserve.
func (s *Server) HoldIngestBudget(n int64) (release func()) {
	main, reserve, sentOn, _ := s.ingestBudget()
	var holds []*bodyHold
	for _, p := range []struct {
		sem  *semaphore.Weighted
		size int64
	}{{sentOn, s.ingestReserveSize}, {main, s.ingestMainSize()}, {reserve, s.ingestReserveSize}} {
		k := min(n, p.size)
		if err := p.sem.Acquire(context.Background(), k); err != nil {
			panic(err) // a Background context is never done
		}
		s.ingestHeld.Add(k)
		holds = append(holds, &bodyHold{s: s, sem: p.sem, n: k})
		n -= k
	}
	return func() {
		for _, h := range holds {
			h.release()
		}
	}
}
