package httpapi

import (
	"strings"
	"testing"
)

// A JSON body that starts with a UTF-8 byte order mark (what Windows
// PowerShell 5's Out-File and Set-Content -Encoding UTF8 write) is refused
// saying so, and a syntax error at a non-ASCII character names that
// character: encoding/json names the byte it stopped at as if it were
// Latin-1, so both were "invalid character 'ï'" (a BOM) or 'æ' (the first
// byte of 東), characters the body does not hold. Both the object routes
// (decodeRead) and POST /v1/events (syntaxReason) say the same.
func TestSyntaxErrorNamesTheCharacterSent(t *testing.T) {
	for _, c := range []struct{ body, want, not string }{
		{"\ufeff{\"title\":\"x\"}", "byte order mark (U+FEFF)", "'ï'"},
		{"{\"title\":東}", "invalid character '東' (U+6771)", "'æ'"},
		{"{\"title\":\"x\"}\u3000", "invalid character '\u3000' (U+3000)", "'ã'"},
		{"{\"title\":x}", "invalid character 'x' looking for beginning of value", "U+"},
	} {
		var target struct {
			Title string `json:"title"`
		}
		err := decodeRead([]byte(c.body), &target)
		if trailing := strings.HasSuffix(c.body, "\u3000"); trailing {
			// decodeRead reads one value and refuses what follows it
			c.want = "found more after it"
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
			t.Errorf("decodeRead(%q) = %v, want it to say %s", c.body, err, c.want)
		}
		if c.want == "found more after it" {
			c.want = "invalid character '\u3000' (U+3000)"
		}
		if got := syntaxReason([]byte(c.body)); !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("syntaxReason(%q) = %s, want it to say %s", c.body, got, c.want)
		}
	}
}
