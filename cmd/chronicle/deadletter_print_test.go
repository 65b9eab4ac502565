package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/rivo/uniseg"
)

// deadletter list prints a letter's key, event id and type, which come
// from the refused record as written (a record produced straight to
// Kafka, or an event id with U+202E, which POST /v1/events accepts):
// terminal escapes, bidi controls, tabs and bytes that are not UTF-8 are
// shown escaped, so a letter can neither drive the terminal, reorder the
// line it is on (RIGHT-TO-LEFT OVERRIDE makes "exe.txt" read "txt.exe")
// nor shift the table's columns. Text in other scripts is printed as it
// is. Before, all of it was written raw.
func TestDeadletterListEscapesControls(t *testing.T) {
	ls := []deadletter.Letter{
		{ID: "chronicle.sessions:0:7", Handler: "sessions@chronicle.sessions", Key: "k\x1b]0;pwned\x07\tx", EventID: "report\u202etxt.exe", EventType: "a\u2066b\xff", Reason: "refused"},
		{ID: "chronicle.sessions:0:8", Handler: "sessions@chronicle.sessions", Key: "セッション-1", EventID: "تقرير-1", EventType: "🚀\u200d", Reason: "理由"},
	}
	var out bytes.Buffer
	if err := printLetters(&out, ls); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u2066", "\xff"} {
		if strings.Contains(s, bad) {
			t.Errorf("output holds %q raw:\n%s", bad, s)
		}
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), s)
	}
	if got := len(strings.Fields(lines[1])); got != 7 {
		t.Errorf("first letter's row has %d columns, want 7: %q", got, lines[1])
	}
	for _, want := range []string{"セッション-1", "تقرير-1", "🚀\u200d", "理由", `"report\u202etxt.exe"`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// deadletter list's columns line up on a terminal when a letter holds
// wide characters: a Japanese or Chinese character, or an emoji, takes two
// columns of a terminal, and the table pads by display width (before, by
// characters, text/tabwriter's count, so a row with セッション-1 pushed its
// later columns 5 cells right of the header's).
func TestDeadletterListAlignsWideCharacters(t *testing.T) {
	ls := []deadletter.Letter{
		{ID: "chronicle.sessions:0:7", Handler: "sessions@chronicle.sessions", Key: "session-1", EventID: "e-1", EventType: "coordination.session.completed.v1", Reason: "refused"},
		{ID: "chronicle.sessions:0:8", Handler: "sessions@chronicle.sessions", Key: "セッション-1", EventID: "東京🚀", EventType: "coordination.session.completed.v1", Reason: "理由"},
	}
	var out bytes.Buffer
	if err := printLetters(&out, ls); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	col := func(line, prefix string) int {
		i := strings.Index(line, prefix)
		if i < 0 {
			t.Fatalf("%q not in %q", prefix, line)
		}
		return uniseg.StringWidth(line[:i])
	}
	header := col(lines[0], "TYPE")
	for _, l := range lines[1:] {
		if got := col(l, "coordination."); got != header {
			t.Errorf("TYPE starts at display column %d in %q, at %d in the header:\n%s", got, l, header, out.String())
		}
	}
}

// A reason does not repeat the letter's position, the ID column: the
// engine's reasons start "at <position>: " (a producer's walkthrough,
// 2026-12-06). --json keeps the reason whole.
func TestDeadletterListReasonWithoutItsPosition(t *testing.T) {
	ls := []deadletter.Letter{{ID: "chronicle.sessions:0:7", Handler: "sessions@chronicle.sessions", Key: "k", EventID: "e", EventType: "t", Reason: "at chronicle.sessions:0:7: session k: not started"}}
	var out bytes.Buffer
	if err := printLetters(&out, ls); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, "chronicle.sessions:0:7") != 1 || !strings.Contains(s, "session k: not started") {
		t.Errorf("the position once, the reason after it:\n%s", s)
	}
}
