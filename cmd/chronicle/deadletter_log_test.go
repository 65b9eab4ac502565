package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors"
)

// TestServeLogsADeadLetterOnce: serve's OnDeadLetter hook writes one slog
// line per letter naming the handler, topic:partition:offset, the event's
// id and the reason (the engine calls it once per letter:
// TestLettersByScope). Before, serve's pipeline had no logger at all.
func TestServeLogsADeadLetterOnce(t *testing.T) {
	var b bytes.Buffer
	logDeadLetter(&b)(processors.LetterData{Topic: "chronicle.searches", Partition: 2, Offset: 41, Handler: "treesearch@chronicle.searches",
		Reason: "event: /data/tokens: reserving 900 tokens would breach the quota", EventID: "g24-901-4", EventType: "search.quota.reserved.v1", Scope: "project:a"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), b.String())
	}
	for _, want := range []string{"level=WARN", `msg="chronicle: dead letter"`, "handler=treesearch@chronicle.searches", "at=chronicle.searches:2:41",
		"event_id=g24-901-4", "scope=project:a", `reason="event: /data/tokens: reserving 900 tokens would breach the quota"`} {
		if !strings.Contains(lines[0], want) {
			t.Fatalf("%q lacks %q", lines[0], want)
		}
	}
}
