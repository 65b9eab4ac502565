package processors

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill"
)

// A change of the partitions an instance owns is logged, topics and
// partitions sorted; none is not (an operator's walkthrough, 2026-12-06:
// nothing said a member died or a takeover happened).
func TestLogOwnership(t *testing.T) {
	l := watermill.NewCaptureLogger()
	logOwnership(l, "engine: partitions assigned to this instance", map[string][]int32{"chronicle.sessions": {2, 0}, "chronicle.memories": {0}, "chronicle.x": {}})
	logOwnership(l, "engine: partitions revoked", map[string][]int32{})
	logs := l.Captured()[watermill.InfoLogLevel]
	if len(logs) != 1 || logs[0].Msg != "engine: partitions assigned to this instance" || logs[0].Fields["partitions"] != "chronicle.memories:0 chronicle.sessions:0,2" {
		t.Fatalf("logged %+v, want one line with chronicle.memories:0 chronicle.sessions:0,2", logs)
	}
}
