package events

import (
	"fmt"
	"unicode/utf8"
)

// InvalidUTF8 finds the first byte of b that is not UTF-8: ok is false
// when b is valid; else ptr is the JSON pointer of the value holding it
// ("/" when none does: the byte sits between values) and reason says
// "not valid UTF-8 at byte <offset> (JSON text is UTF-8, RFC 8259
// section 8.1)", the offset 0-based in b. The HTTP routes name the member
// with it, a body's (httpapi) and an event's (ParseProducerEvent).
func InvalidUTF8(b []byte) (ptr, reason string, ok bool) {
	if utf8.Valid(b) {
		return "", "", false
	}
	at := len(b)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			at = i
			break
		}
		i += n
	}
	if ptr = PointerAt(b, int64(at)); ptr == "" {
		ptr = "/"
	}
	return ptr, fmt.Sprintf("not valid UTF-8 at byte %d (JSON text is UTF-8, RFC 8259 section 8.1)", at), true
}
