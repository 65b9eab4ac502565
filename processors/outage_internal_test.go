package processors

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
)

// A call repeated every second logs its failure once per outage, and its
// recovery once with the count (the standby refresh logged one error a
// second per instance through a broker outage: an SRE's walkthrough,
// 2026-11-30).
func TestOutageIsLoggedOnce(t *testing.T) {
	logs := watermill.NewCaptureLogger()
	var o outage
	down := errors.New("connection refused")
	for i := 0; i < 30; i++ {
		o.note(logs, "standby replicas: refresh", down)
	}
	o.note(logs, "standby replicas: refresh", nil)
	o.note(logs, "standby replicas: refresh", nil)
	o.note(logs, "standby replicas: refresh", down)
	errs, infos := logs.Captured()[watermill.ErrorLogLevel], logs.Captured()[watermill.InfoLogLevel]
	if len(errs) != 2 || len(infos) != 1 || infos[0].Fields["failed_calls"] != 30 {
		t.Fatalf("errors %d, infos %d (%v); want 2 errors (one per outage) and 1 recovery counting 30 calls", len(errs), len(infos), infos)
	}
}
