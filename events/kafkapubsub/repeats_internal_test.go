package kafkapubsub

import (
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/twmb/franz-go/pkg/kgo"
)

// While the brokers are away, franz-go fails the same way several times a
// second: one line per kind and RepeatWindow gets through, the next says
// how many were held back, and another error is not held back by the
// first (an operator's walkthrough counted 295 lines in 81 s of an
// outage, 2026-11-30).
func TestRepeatedErrorsAreLoggedOncePerWindow(t *testing.T) {
	now := time.Unix(0, 0)
	logs := watermill.NewCaptureLogger()
	l := kgoLogger{logger: logs, gate: &repeatGate{now: func() time.Time { return now }}}
	refused := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	for i := 0; i < 100; i++ {
		l.Log(kgo.LogLevelError, "group manage loop errored", "group", "g", "err", refused)
		now = now.Add(100 * time.Millisecond) // ten a second for ten seconds
	}
	l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "127.0.0.1:9", "err", refused)
	l.Log(kgo.LogLevelError, "group manage loop errored", "group", "g", "err", errors.New("another"))
	if got := len(logs.Captured()[watermill.ErrorLogLevel]); got != 2 {
		t.Fatalf("%d error lines for 100 repeats and one other error within the window, want 2", got)
	}
	if got := len(logs.Captured()[watermill.InfoLogLevel]); got != 1 {
		t.Fatalf("%d warning lines, want 1", got)
	}
	now = now.Add(RepeatWindow)
	l.Log(kgo.LogLevelError, "group manage loop errored", "group", "g", "err", refused)
	errs := logs.Captured()[watermill.ErrorLogLevel]
	if len(errs) != 3 || errs[2].Fields["repeated"] != 99 {
		t.Fatalf("after the window: %d error lines, the last %v; want 3, the last saying repeated 99", len(errs), errs[len(errs)-1].Fields)
	}
	// debug and info lines are not held back
	for i := 0; i < 3; i++ {
		l.Log(kgo.LogLevelInfo, "assigning partitions")
	}
	if got := len(logs.Captured()[watermill.DebugLogLevel]); got != 3 {
		t.Fatalf("%d debug lines for 3 info logs, want 3", got)
	}
}
