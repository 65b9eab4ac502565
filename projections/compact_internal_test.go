package projections

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The content hash of stored idempotency keys was computed with
// encoding/json's Compact: compact must give the same bytes, also on
// escapes, HTML characters, line separators and deep nesting.
func TestCompactAsEncodingJSON(t *testing.T) {
	cases := []string{
		`{"a": 1, "b": [true, false, null], "c": {"d": "e f"}}`,
		"{\n  \"html\": \"<a href=\\\"x\\\">&amp;</a>\",\n  \"u\": \"\\u003c\\u2028\\u2029 é \\ud83d\\ude00\"\n}",
		` { "n" : -1.5e+10 , "z" : 0 , "s" : "\t tab \\t" } `,
		`[[[[[[[[[[{"deep": [1, 2, {"x": []}]}]]]]]]]]]]`,
		`{"esc": "\\ \/ \b\f\n\r\t \" ' "}`,
		"{\"raw\": \"<>&\u2028\"}",
	}
	for _, c := range cases {
		var want, got bytes.Buffer
		if err := json.Compact(&want, []byte(c)); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if err := compact(&got, []byte(c)); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Errorf("compact\n%s\ngives\n%s\nencoding/json\n%s", c, got.Bytes(), want.Bytes())
		}
		if a := compactAlready([]byte(c)); a != (c == want.String()) {
			t.Errorf("compactAlready(%s) = %v", c, a)
		}
		if !compactAlready(want.Bytes()) {
			t.Errorf("compactAlready(%s) = false on compacted JSON", want.Bytes())
		}
	}
}

// compactAlready tells compact JSON from JSON with white space outside its
// strings, whatever the strings hold (spaces, escaped quotes, a trailing
// backslash escape).
func TestCompactAlready(t *testing.T) {
	for c, want := range map[string]bool{
		`{"a":"b c","d":[1,2]}`:       true,
		`{"a":"\\","b":" \" "}`:       true,
		`{"a":"\\", "b":1}`:           false,
		`{"a":"x\" ","b" :1}`:         false,
		`["\u0020",true,null,-1.5e3]`: true,
		"[1,\n2]":                     false,
		`"  "`:                        true,
		` "x"`:                        false,
	} {
		if got := compactAlready([]byte(c)); got != want {
			t.Errorf("compactAlready(%s) = %v, want %v", c, got, want)
		}
	}
}

// FuzzCompactAsEncodingJSON: on any valid JSON, compact and encoding/json
// agree.
func FuzzCompactAsEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"a": [1, "b", {"c": null}]}`))
	f.Add([]byte("{\"s\": \"<\u2028>\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got bytes.Buffer
		if json.Compact(&want, b) != nil {
			return
		}
		if err := compact(&got, b); err != nil {
			t.Fatalf("encoding/json compacts %q, compact fails: %v", b, err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Fatalf("compact %q = %q, encoding/json %q", b, got.Bytes(), want.Bytes())
		}
		if a := compactAlready(b); a != bytes.Equal(b, want.Bytes()) {
			t.Fatalf("compactAlready(%q) = %v, compact gives %q", b, a, want.Bytes())
		}
	})
}
