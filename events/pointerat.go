package events

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// PointerAt is the JSON pointer of the value of body that ends at byte
// offset, or that holds it (a json.UnmarshalTypeError's Offset: the end of
// the value that did not fit; a byte inside a string), "" when none does. encoding/json's error names the Go
// field path, which has no array index ("items.n" for the second of
// [{"n":1},{"n":"x"}]) and splits map keys holding '.': a pointer built
// from it could name nothing (a review, 2026-11-30).
func PointerAt(body []byte, offset int64) string {
	return pointerAt(body, offset, false)
}

// ObjectOfNameAt is the JSON pointer of the object whose member name holds
// byte offset of body ("/" for the top-level object), "" when no member
// name does: where to point for a fault in a name, whose own pointer
// would repeat it.
func ObjectOfNameAt(body []byte, offset int64) string {
	return pointerAt(body, offset, true)
}

// pointerAt is PointerAt, or with names ObjectOfNameAt.
func pointerAt(body []byte, offset int64, names bool) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		array bool
		index int
		key   string
		inKey bool // an object's next token is a key
	}
	var stack []frame
	path := func() string {
		var b bytes.Buffer
		for _, f := range stack {
			if names && f.inKey { // the object, not a member, whose name is being read
				break
			}
			b.WriteByte('/')
			if f.array {
				b.WriteString(strconv.Itoa(f.index))
			} else {
				b.WriteString(pointerEscaper.Replace(f.key))
			}
		}
		return b.String()
	}
	// valueDone moves the innermost container past the value just read
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].inKey = true
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].inKey {
			if k, ok := tok.(string); ok {
				if names && dec.InputOffset() >= offset {
					if p := path(); p != "" {
						return p
					}
					return "/"
				}
				stack[n-1].key, stack[n-1].inKey = k, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, frame{array: tok == json.Delim('['), inKey: tok == json.Delim('{')})
			if tok == json.Delim('[') {
				stack[len(stack)-1].index = 0
			}
			// the container's own path is its parent's entry: kept by
			// reading it back at its close
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if !names && dec.InputOffset() >= offset {
				return path()
			}
			valueDone()
			continue
		}
		if !names && dec.InputOffset() >= offset {
			return path()
		}
		valueDone()
	}
}
