package projections

import (
	"bytes"

	"github.com/chronicle-dev/chronicle/events"
)

// appendWithoutMember appends to dst the compact JSON document b (no white
// space outside strings, as ContentHash hashes it) with every top-level
// member whose name is spelled exactly name left out, and reports whether
// one was. b that is no object, or holds no such member, is appended as it
// is. Names with a \u or \/ escape are canonical in ContentHash's input
// already (events.AppendCanonical), so a spelling of name with escapes is
// name here too; a malformed b is appended as it is.
func appendWithoutMember(dst, b []byte, name string) ([]byte, bool) {
	if len(b) < 2 || b[0] != '{' || !containsKey(b, name) {
		return append(dst, b...), false
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
		if k < 0 || k >= len(b) || b[k] != ':' {
			return append(dst[:start], b...), false
		}
		end := skipValue(b, k+1)
		if end < 0 {
			return append(dst[:start], b...), false
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
	if !dropped {
		return append(dst[:start], b...), false
	}
	return append(dst, '}'), true
}

// containsKey reports whether b holds "name": somewhere, the cheap test
// before appendWithoutMember walks b.
func containsKey(b []byte, name string) bool {
	var k [32]byte
	key := append(append(append(k[:0], '"'), name...), '"', ':')
	return bytes.Contains(b, key)
}

// skipValue returns the index past the JSON value of compact b that
// starts at i, or -1 when b ends first.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := skipValue(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// withoutAuthor is env with its data's author member
// (events.AuthorMember) left out, compacted as a content hash of dedup
// version v reads it (canonical from version 4 on), and whether env's data
// held one: what a key of dedup version 2 to 5 holds for an event a
// producer wrote without author (through Kafka or `chronicle ingest`) that
// POST /v1/events resends with the caller's name set.
func withoutAuthor(env *events.Envelope, v int) (events.Envelope, bool) {
	name := events.AuthorMember(env.Type)
	if name == "" {
		return *env, false
	}
	var flat []byte
	if v >= 4 {
		c, err := events.AppendCanonical(nil, env.Data)
		if err != nil {
			return *env, false
		}
		flat = c
	} else {
		var buf bytes.Buffer
		if err := compact(&buf, env.Data); err != nil {
			return *env, false
		}
		flat = buf.Bytes()
	}
	data, ok := appendWithoutMember(nil, flat, name)
	alt := *env
	alt.Data = data
	return alt, ok
}
