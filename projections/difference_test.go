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
