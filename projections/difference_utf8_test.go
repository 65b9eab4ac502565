package projections

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// audit's excerpts of two differing rows cut them at characters: a row of
// Japanese text that differs inside a character (東, E6 9D B1, against 杯,
// E6 9D AF) and is long on both sides was shown from the middle of a
// character and cut inside another, so the excerpts, printed to a
// terminal, began and ended in broken bytes.
func TestDifferenceExcerptsCutAtCharacters(t *testing.T) {
	pre := strings.Repeat("あ", 40) + "x"
	post := strings.Repeat("い", 100)
	d := &Difference{Key: "p/memories/m", Left: []byte(pre + "東" + post), Right: []byte(pre + "杯" + post)}
	s := d.String()
	if !utf8.ValidString(s) {
		t.Fatalf("excerpts are not valid UTF-8:\n%q", s)
	}
	if !strings.Contains(s, "東") || !strings.Contains(s, "杯") {
		t.Fatalf("excerpts lack the differing characters:\n%s", s)
	}
}
