package events

import "bytes"

// WithoutMember appends to dst the compact JSON object b (no white space
// outside strings, as AppendCanonical writes it) with every top-level
// member whose name is spelled exactly name left out, and returns it with
// ok true; when b is no object, holds no such member or is malformed, it
// returns dst unchanged and false (b stands as it is). A name with a \u or
// \/ escape is spelled out in canonical data, so such a spelling of name is
// name here too. The content hash of the idempotency check leaves an
// event's author member out with it (AuthorMember,
// projections.ContentHash).
func WithoutMember(dst, b []byte, name string) (out []byte, ok bool) {
	if len(b) < 2 || b[0] != '{' || !hasMemberName(b, name) {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, '{')
	dropped, first := false, true
	i := 1
	for i < len(b) && b[i] != '}' {
		if b[i] == ',' {
			i++
		}
		m := i
		k := skipValue(b, i) // the member's name
		if i >= len(b) || b[i] != '"' || k < 0 || k >= len(b) || b[k] != ':' {
			return dst[:start], false
		}
		end := skipValue(b, k+1)
		if end < 0 || end >= len(b) {
			return dst[:start], false // the object does not end
		}
		if k-m == len(name)+2 && string(b[m+1:k-1]) == name {
			dropped = true
		} else {
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, b[m:end]...)
			first = false
		}
		i = end
	}
	if !dropped || i >= len(b) {
		return dst[:start], false
	}
	return append(dst, '}'), true
}

// hasMemberName reports whether b holds "name": somewhere, the cheap test
// before WithoutMember walks b.
func hasMemberName(b []byte, name string) bool {
	var k [32]byte
	key := append(append(append(k[:0], '"'), name...), '"', ':')
	return bytes.Contains(b, key)
}
