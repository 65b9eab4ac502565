package processors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
)

// ParseUntil reads an RFC 3339 time or topic:partition:offset; a time
// without its zone is named as such, not split at its colons into a
// position (it used to read "2026-11-25T13:58:03" as topic
// "2026-11-25T13", partition 58, offset 3).
func TestParseUntil(t *testing.T) {
	u, err := processors.ParseUntil("2026-11-25T13:58:03Z")
	if err != nil || !u.Time.Equal(time.Date(2026, 11, 25, 13, 58, 3, 0, time.UTC)) || u.Pos != nil {
		t.Fatalf("time: %+v %v", u, err)
	}
	u, err = processors.ParseUntil("chronicle.memories:0:294")
	if err != nil || u.Pos == nil || u.Pos.Topic != "chronicle.memories" || u.Pos.Partition != 0 || u.Pos.Offset != 294 {
		t.Fatalf("position: %+v %v", u, err)
	}
	for in, want := range map[string]string{
		"2026-11-25T13:58:03":    "looks like a time but is not RFC 3339",
		"2026-11-25":             "looks like a time but is not RFC 3339",
		"yesterday":              "neither an RFC 3339 time nor topic:partition:offset",
		"chronicle.memories:x:1": "partition and offset must be non-negative integers",
	} {
		if _, err := processors.ParseUntil(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
