package httpapi

import (
	"log/slog"
	"sync"
	"time"
)

// OutageLogEvery is the least time between two "broker not acknowledging
// events" lines of POST /v1/events (1 min).
const OutageLogEvery = time.Minute

// outageLog logs the broker outages POST /v1/events meets: a line when
// publishes start failing and one when they succeed again, with the count
// of requests answered 503 since the last such line (those of outages
// within the minute included), and at most one such pair per
// OutageLogEvery. Before, the pair was logged at every switch, so a
// broker that acknowledged some publishes and not others logged a pair
// per request: 20 "not acknowledging" and 19 "again" lines within one
// second (a load walkthrough, 2026-12-07, 128 clients posting 3.9 MB
// batches). The zero value is ready to use.
type outageLog struct {
	mu       sync.Mutex
	down     bool      // the last publish failed
	logged   bool      // a "not acknowledging" line awaits its "again"
	loggedAt time.Time // that line's time
	failures int       // 503s since the last "again" line
}

// failed notes a publish the broker did not acknowledge at now.
func (o *outageLog) failed(now time.Time, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
	if o.down {
		return
	}
	o.down = true
	if o.logged || (!o.loggedAt.IsZero() && now.Sub(o.loggedAt) < OutageLogEvery) {
		return // within the last line's minute: counted, not logged
	}
	o.logged, o.loggedAt = true, now
	slog.Warn("broker not acknowledging events: POST /v1/events answers 503", "error", err)
}

// succeeded notes a publish the broker acknowledged.
func (o *outageLog) succeeded() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	o.down = false
	if !o.logged {
		return
	}
	o.logged = false
	slog.Info("broker acknowledging events again", "requests_answered_503", o.failures)
	o.failures = 0
}
