package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/zonetest"
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

// serve's slog lines give their time in UTC whatever the host's zone, as
// the API's times and the CLI's messages do: under TZ=America/New_York
// they said 15:00:06-05:00 (a time walkthrough, 2026-12-04).
func TestServeLogsTimesInUTC(t *testing.T) {
	if !zonetest.Run(t, "America/New_York", time.Minute) {
		return
	}
	var b bytes.Buffer
	logDeadLetter(&b)(processors.LetterData{Topic: "chronicle.sessions", Handler: "sessions", Reason: "r"})
	j := slog.New(slog.NewJSONHandler(&b, logUTC))
	j.Warn("x")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), b.String())
	}
	text, _, _ := strings.Cut(strings.TrimPrefix(lines[0], "time="), " ")
	var rec struct{ Time string }
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{text, rec.Time} {
		ts, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !strings.HasSuffix(at, "Z") || time.Since(ts).Abs() > time.Minute {
			t.Errorf("log time %q (%v): want the present in UTC, ending in Z", at, err)
		}
	}
}
