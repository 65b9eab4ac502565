package events

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendCanonical appends to dst the canonical form of the valid JSON
// document b: the white space outside strings dropped (as json.Compact
// does), and every string that holds an escape rewritten in one spelling —
// its decoded text with only '"', '\' and the control characters escaped
// (\b \f \n \r \t, else \u00XX), so "\u2019" and "’", "a\/b" and "a/b",
// "\u000a" and "\n" are the same bytes. Members keep their order, numbers
// their spelling. Two encodings of the same JSON value, as a client's
// encoder re-encoding an event for a retry makes them (Python's json.dumps
// escapes every non-ASCII character), differ only in those two ways, so
// the content hash of the idempotency check (package projections) takes
// them as the same event. b must be valid JSON (a parsed event's data):
// only a malformed string is an error; anything else outside strings is
// copied as it is.
func AppendCanonical(dst, b []byte) ([]byte, error) {
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			var err error
			if dst, i, err = appendCanonicalString(dst, b, i); err != nil {
				return dst, err
			}
		default:
			// a run of bytes outside strings up to the next string or space
			j := i + 1
			for j < len(b) && b[j] != '"' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
		}
	}
	return dst, nil
}

var errCanonical = errors.New("events: canonical JSON: invalid string")

// appendCanonicalString appends the string token that starts at b[i] (a
// '"') in AppendCanonical's one spelling and returns the index past it.
func appendCanonicalString(dst, b []byte, i int) ([]byte, int, error) {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	i++
	for {
		j := len(b)
		if k := bytes.IndexAny(b[i:], `"\`); k >= 0 {
			j = i + k
		}
		dst = append(dst, b[i:j]...)
		if j >= len(b) {
			return dst, j, errCanonical
		}
		if b[j] == '"' {
			return append(dst, '"'), j + 1, nil
		}
		// an escape
		if j+1 >= len(b) {
			return dst, j, errCanonical
		}
		var r rune
		switch e := b[j+1]; e {
		case '"', '\\':
			dst = append(dst, '\\', e)
			i = j + 2
			continue
		case '/':
			r, i = '/', j+2
		case 'b':
			r, i = '\b', j+2
		case 'f':
			r, i = '\f', j+2
		case 'n':
			r, i = '\n', j+2
		case 'r':
			r, i = '\r', j+2
		case 't':
			r, i = '\t', j+2
		case 'u':
			var ok bool
			if r, ok = hex4(b, j+2); !ok {
				return dst, j, errCanonical
			}
			i = j + 6
			if utf16.IsSurrogate(r) {
				// a pair, or U+FFFD as encoding/json decodes a lone one
				r2, ok := rune(0), false
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					r2, ok = hex4(b, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r, i = dec, i+6
				} else {
					r = utf8.RuneError
				}
			}
		default:
			return dst, j, errCanonical
		}
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
}

// hex4 decodes the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
