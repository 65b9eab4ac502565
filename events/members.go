package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RepeatedMember returns the JSON pointer of the first object member whose
// name repeats an earlier member of the same object in raw, e.g. "/id" or
// "/data/memory_id", and the reason to answer; ok is false when there is
// none (or raw is not JSON: the parse reports that). RFC 8259 leaves the
// meaning of repeated names open and decoders differ (encoding/json keeps
// the last; RFC 7493, I-JSON, forbids them): for an event, whose id is its
// idempotency key, the producer paths refuse them instead of guessing, and
// the HTTP API's route bodies (an event_id, a scope) refuse them with this
// check too.
func RepeatedMember(raw []byte) (pointer, reason string, ok bool) {
	ptr, ok := repeatedMember(raw)
	if !ok {
		return "", "", false
	}
	name := strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[strings.LastIndexByte(ptr, '/')+1:])
	return ptr, fmt.Sprintf("the member %q appears twice in one object (RFC 8259 gives it no meaning; send it once)", name), true
}

// repeatedMember is RepeatedMember's pointer.
func repeatedMember(raw []byte) (pointer string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p, ok, _ := firstRepeated(dec, "")
	return p, ok
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// PointerToken escapes a member name as one JSON pointer reference token
// (RFC 6901: "~" as "~0", "/" as "~1"): "a/b" is the token "a~1b".
func PointerToken(name string) string { return pointerEscaper.Replace(name) }

// firstRepeated reads one value from dec; ptr is its JSON pointer.
func firstRepeated(dec *json.Decoder, ptr string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		names := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			name, _ := k.(string)
			at := ptr + "/" + pointerEscaper.Replace(name)
			if names[name] {
				return at, true, nil
			}
			names[name] = true
			if p, ok, err := firstRepeated(dec, at); ok || err != nil {
				return p, ok, err
			}
		}
		_, err = dec.Token() // '}'
		return "", false, err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if p, ok, err := firstRepeated(dec, ptr+"/"+strconv.Itoa(i)); ok || err != nil {
				return p, ok, err
			}
		}
		_, err = dec.Token() // ']'
		return "", false, err
	}
	return "", false, nil
}
