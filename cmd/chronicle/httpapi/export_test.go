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
// called: a test holds the budget without racing requests for it. Its
// main part is taken first, then the reserve for small bodies.
func (s *Server) HoldIngestBudget(n int64) (release func()) {
	sem, reserve, _ := s.ingestBudget()
	inMain := min(n, s.ingestLimit-s.ingestReserveSize)
	if err := sem.Acquire(context.Background(), inMain); err != nil {
		panic(err) // a Background context is never done
	}
	if err := reserve.Acquire(context.Background(), n-inMain); err != nil {
		panic(err)
	}
	s.ingestHeld.Add(n)
	m, r := &bodyHold{s: s, sem: sem, n: inMain}, &bodyHold{s: s, sem: reserve, n: n - inMain}
	return func() { m.release(); r.release() }
}
