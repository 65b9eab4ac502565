package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A broker that acknowledges some publishes and not others is one outage
// in the log: one "not acknowledging" line and one "again" line counting
// the 503s, and no more within OutageLogEvery; an outage after that is
// logged again. Before, POST /v1/events logged a pair at every switch: 20
// and 19 lines within one second under a load walkthrough's overload
// (2026-12-07).
func TestFlappingBrokerIsLoggedOnce(t *testing.T) {
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	var o outageLog
	err := errors.New("produce 4 of 4 records failed")
	t0 := time.Now()
	for i := range 20 { // fail, succeed, fail, succeed, … within a second
		o.failed(t0.Add(time.Duration(i)*40*time.Millisecond), err)
		o.succeeded()
	}
	if n := strings.Count(logged.String(), "broker not acknowledging events"); n != 1 {
		t.Errorf("20 failed publishes between successes within a second: %d outage lines, want 1:\n%s", n, logged.String())
	}
	if n := strings.Count(logged.String(), "broker acknowledging events again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "requests_answered_503=1") {
		t.Errorf("the recovery line does not count the outage's 503s:\n%s", logged.String())
	}

	// a minute on, a new outage is a new line, and its recovery counts
	// every 503 since the last recovery line: the 19 unlogged and its 2
	logged.Reset()
	o.failed(t0.Add(OutageLogEvery+time.Second), err)
	o.failed(t0.Add(OutageLogEvery+2*time.Second), err)
	o.succeeded()
	if !strings.Contains(logged.String(), "broker not acknowledging events") || !strings.Contains(logged.String(), "requests_answered_503=21") {
		t.Errorf("an outage a minute after the last line: want its line and a recovery counting 21 503s:\n%s", logged.String())
	}
}
