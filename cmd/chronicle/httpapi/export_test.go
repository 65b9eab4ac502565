package httpapi

import "context"

// ScanSessionEvents makes GET /v1/sessions/{id}/events read every session
// by the scan (as a data directory older than the sessionlog index does)
// until the returned function is called.
func ScanSessionEvents() (restore func()) {
	scanOnly.Store(true)
	return func() { scanOnly.Store(false) }
}

// HoldIngestBudget takes n bytes of s's ingest budget (at most its size),
// as bodies being read would hold them, until the returned function is
// called: a test holds the budget without racing requests for it.
func (s *Server) HoldIngestBudget(n int64) (release func()) {
	sem, _ := s.ingestBudget()
	if err := sem.Acquire(context.Background(), n); err != nil {
		panic(err) // a Background context is never done
	}
	s.ingestHeld.Add(n)
	h := &bodyHold{s: s, n: n}
	return h.release
}
