package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
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

// With --request-log json the service's own slog warnings (a metrics
// collector failing, the broker not acknowledging) are JSON lines too,
// and so are the dead-letter lines: they came out in Go's default format
// (an SRE's walkthrough, 2026-11-30).
func TestWarningsFollowTheLogFormat(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var b bytes.Buffer
	rl := slog.New(slog.NewJSONHandler(&b, nil))
	useLogFormat(rl)
	slog.Warn("GET /metrics: a collector failed", "error", "broker away")
	logDeadLetterTo(rl)(processors.LetterData{Topic: "chronicle.searches", Partition: 2, Offset: 41, Handler: "treesearch@chronicle.searches", EventID: "e1", Reason: "no"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), b.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["level"] != "WARN" {
			t.Errorf("not a JSON warning: %s (%v)", l, err)
		}
	}
}
