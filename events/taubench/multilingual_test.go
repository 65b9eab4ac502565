package taubench

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A ground-truth action whose argument is long non-ASCII text (a Japanese
// note, an emoji sequence) gives a criterion description that is valid
// UTF-8 and cut between graphemes, not inside a character or an emoji
// sequence joined by U+200D: before, it was cut at a
// byte count, and the description held half a character (written as
// U+FFFD once encoded).
func TestCriterionDescriptionCutsWholeCharacters(t *testing.T) {
	for _, note := range []string{
		strings.Repeat("東京の天気", 20),
		strings.Repeat("👩‍👩‍👧", 20),
		"a" + strings.Repeat("é", 60),
	} {
		args, _ := json.Marshal(map[string]string{"note": note})
		cs := Criteria(Task{Actions: []Action{{Name: "send_note", Kwargs: args}}})
		d := cs[0].Description
		if !utf8.ValidString(d) {
			t.Errorf("note %.12q…: description %q is not valid UTF-8", note, d)
		}
		if !strings.HasSuffix(d, "...)") {
			t.Errorf("note %.12q…: description %q is not shortened", note, d)
		}
		if family := "👩‍👩‍👧"; strings.HasPrefix(note, family) {
			kept := strings.TrimSuffix(strings.TrimPrefix(d, "call send_note(note="), "...)")
			if kept == "" || strings.ReplaceAll(kept, family, "") != "" {
				t.Errorf("description %q cuts a family emoji (one grapheme) apart", d)
			}
		}
	}
}
