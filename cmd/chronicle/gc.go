package main

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target (Go's GOGC) every
// chronicle command runs with unless the GOGC environment variable is set:
// 200, Go's default being 100. The engine's allocations per record are
// many and short-lived (decoded rows, encoded rows, Pebble batches), so
// with 100 the collector ran often; with 200 it runs half as often for a
// heap that may grow to three times the live data instead of twice. Chosen
// on chronicle bench, alternating, 20,000 events: the default processors'
// CPU per event fell by a median 10% (8 rounds: 7 faster, one slower), the
// replay's rate rose by 11-12% in 3 of 4 rounds (56% in one whose run at
// 100 was slow), and the bench's peak RSS rose from 409 MB to 556 MB;
// with 400, no faster than 200 and 877 MB. GOGC=100 restores Go's default, GOGC=off with GOMEMLIMIT trades
// the other way; both are Go's own settings (runtime/debug).
const DefaultGCPercent = 200

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
