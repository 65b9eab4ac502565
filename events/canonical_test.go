package events_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf16"

	"github.com/chronicle-dev/chronicle/events"
)

// AppendCanonical gives two encodings of one JSON value the same bytes
// when they differ in white space or in how strings are escaped, and
// keeps apart what differs in value, member order or number spelling.
func TestAppendCanonical(t *testing.T) {
	canon := func(s string) string {
		t.Helper()
		out, err := events.AppendCanonical(nil, []byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return string(out)
	}
	for _, c := range []struct{ a, b string }{
		{`{"b":"’","a":1}`, `{"b":"\u2019","a":1}`},
		{`{"p":"a/b"}`, `{"p":"a\/b"}`},
		{`["line\nnext"]`, `["line\u000anext"]`},
		{`"say \"hi\""`, `"say \u0022hi\u0022"`},
		{`"back\\slash"`, `"back\u005cslash"`},
		{`"\u0001"`, `"\u0001"`},
		{`"😀"`, `"\ud83d\ude00"`},
		{` { "k" : [ 1 , "x" ] } `, `{"k":[1,"x"]}`},
		{`"<&>"`, `"\u003c\u0026\u003e"`},
	} {
		if ca, cb := canon(c.a), canon(c.b); ca != cb {
			t.Errorf("%s and %s: %s ≠ %s", c.a, c.b, ca, cb)
		}
	}
	for _, c := range []struct{ a, b string }{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`"a"`, `"b"`},
		{`"a\nb"`, `"a\\nb"`},
	} {
		if ca, cb := canon(c.a), canon(c.b); ca == cb {
			t.Errorf("%s and %s: both %s", c.a, c.b, ca)
		}
	}
	// the canonical form is valid JSON with the same value, and canonical
	// already (a fixed point); a string without an escape is kept as is
	for _, s := range []string{`{"b":"’\u2019\t","a":[1,"x\/y",{"c":"\u0000"}]}`, `"plain ’ text"`} {
		out := canon(s)
		var x, y any
		if json.Unmarshal([]byte(s), &x) != nil || json.Unmarshal([]byte(out), &y) != nil {
			t.Fatalf("%s → %s: not valid JSON", s, out)
		}
		if a, _ := json.Marshal(x); !bytes.Equal(a, mustMarshal(y)) {
			t.Errorf("%s → %s: another value", s, out)
		}
		if again := canon(out); again != out {
			t.Errorf("%s → %s → %s: not a fixed point", s, out, again)
		}
	}
	if got := canon(`"plain ’ text"`); got != `"plain ’ text"` {
		t.Errorf("a string without escapes became %s", got)
	}
	if _, err := events.AppendCanonical(nil, []byte(`"open`)); err == nil {
		t.Error("an unterminated string is no error")
	}
}

func mustMarshal(v any) []byte { b, _ := json.Marshal(v); return b }

// Three encoders of one value — encoding/json (escapes <, >, &, U+2028),
// the same without HTML escaping, and an ASCII-only one as Python's
// json.dumps writes (every non-ASCII rune as \uXXXX, pairs beyond the
// BMP) — give one canonical form, which decodes to the value.
func TestAppendCanonicalAcrossEncoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []rune("ab/\\\"<>&\n\t\x01\x1f ’é😀\u2028\u00ff")
	for n := 0; n < 2000; n++ {
		rs := make([]rune, rng.IntN(12))
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		v := map[string]any{"s": string(rs), "n": []any{1.5, string(rs[:len(rs)/2])}}
		std, _ := json.Marshal(v)
		var raw bytes.Buffer
		enc := json.NewEncoder(&raw)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		ascii := asciiOnly(std)
		c1, err1 := events.AppendCanonical(nil, std)
		c2, err2 := events.AppendCanonical(nil, raw.Bytes())
		c3, err3 := events.AppendCanonical(nil, ascii)
		if err1 != nil || err2 != nil || err3 != nil || !bytes.Equal(c1, c2) || !bytes.Equal(c1, c3) {
			t.Fatalf("%q:\n%s\n%s\n%s\n→ %s\n  %s\n  %s (%v %v %v)", string(rs), std, raw.Bytes(), ascii, c1, c2, c3, err1, err2, err3)
		}
		var back any
		if err := json.Unmarshal(c1, &back); err != nil || !bytes.Equal(mustMarshal(back), std) {
			t.Fatalf("%s decodes to another value: %s (%v)", c1, mustMarshal(back), err)
		}
	}
}

// asciiOnly re-escapes every non-ASCII rune of the valid JSON b as \uXXXX.
func asciiOnly(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			out = append(out, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}
