package projections

import (
	"strings"
	"testing"
)

// An audit's difference shows the values around their first differing
// byte: cut at byte 200, two values differing near their end showed two
// equal excerpts (an upgrade walkthrough, 2026-11-30).
func TestDifferenceShowsWhereTheValuesDiffer(t *testing.T) {
	long := strings.Repeat("x", 300)
	d := &Difference{Key: "k", Left: []byte(long + `}`), Right: []byte(long + `,"first_scored":true}`)}
	s := d.String()
	if !strings.Contains(s, "differ from byte 300") || !strings.Contains(s, `"first_scored":true}`) || !strings.Contains(s, "…(220 bytes)") {
		t.Fatalf("%s\nwant the excerpt at byte 300 naming first_scored", s)
	}
	if s := (&Difference{Key: "k", Left: []byte("a")}).String(); !strings.Contains(s, "replay: <absent>") {
		t.Fatalf("%s", s)
	}
}

// TimesOnly tells a difference in how a time is written (an offset
// against UTC, the same instant) from any other.
func TestDifferenceTimesOnly(t *testing.T) {
	for _, c := range []struct {
		left, right string
		want        bool
	}{
		{`{"evaluated_at":"2024-05-18T13:00:34+02:00","n":1}`, `{"evaluated_at":"2024-05-18T11:00:34Z","n":1}`, true},
		{`{"a":"2024-05-18T13:00:34.5+02:00","b":"2024-05-18T01:00:00-05:00"}`, `{"a":"2024-05-18T11:00:34.5Z","b":"2024-05-18T06:00:00Z"}`, true},
		{`{"evaluated_at":"2024-05-18T13:00:34+02:00"}`, `{"evaluated_at":"2024-05-18T13:00:34Z"}`, false}, // another instant
		{`{"evaluated_at":"2024-05-18T13:00:34+02:00","n":1}`, `{"evaluated_at":"2024-05-18T11:00:34Z","n":2}`, false},
		{`{"n":1}`, `{"n":2}`, false},
	} {
		d := &Difference{Key: "k", Left: []byte(c.left), Right: []byte(c.right)}
		if got := d.TimesOnly(); got != c.want {
			t.Errorf("%s against %s: TimesOnly %v, want %v", c.left, c.right, got, c.want)
		}
	}
	if (&Difference{Key: "k", Left: []byte(`"2024-05-18T11:00:34Z"`)}).TimesOnly() {
		t.Error("a row absent on one side is no difference of times only")
	}
}
