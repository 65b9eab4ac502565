package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
)

// decodeBody decodes one JSON request body (at most MaxBodyBytes) into v
// strictly: a field v does not have, a value of the wrong type, a member
// repeated within one object, trailing data or malformed JSON is an error
// whose text names the field and the reason, ready for a 400 — e.g.
// `body: unknown field "titel"`, `body: "tags": got number, want array`,
// `body: /event_id: the member "event_id" appears twice in one object …`.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return bodyError(err)
	}
	return decodeRead(body, v)
}

// decodeRead is decodeBody for a body read already (the routes that look
// at its members too): one JSON value into v, strictly, and nothing after
// it. A member name repeated within one object, at any depth, is refused
// with its pointer, by the check POST /v1/events makes
// (events.RepeatedMember): encoding/json keeps the last one silently, so
// {"event_id":"e-1","event_id":"e-2"} wrote e-2 under an idempotency key
// the client may read as e-1 (found by a new user's walkthrough). So is a
// member whose name matches a field only ignoring case (inexactMember):
// encoding/json takes "Title" for "title". A null body for an object
// (v a struct or map) is refused as an array is ("body: got null, want
// object"), not taken for {}.
func decodeRead(body []byte, v any) error {
	if bytes.HasPrefix(body, utf8BOM) {
		return &fieldError{msg: "body: " + bomReason, pointer: "/", reason: bomReason}
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) && objectTarget(v) {
		// encoding/json leaves the value as it was for null: POST
		// /v1/memories took null for {} ("title: required") while []
		// is refused (found by a new user's walkthrough)
		return &fieldError{msg: "body: got null, want object", pointer: "/", reason: "got null, want object"}
	}
	// bytes that are no UTF-8, and \u escapes of lone surrogates, which
	// encoding/json reads as U+FFFD, are refused naming the member, as
	// POST /v1/events refuses them: two titles differing only there were
	// one memory, merged with its evidence counted twice, and a comment
	// was stored changed (a Python integrator's walkthrough, 2026-12-01)
	if ptr, reason, bad := events.InvalidUTF8(body); bad {
		return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			reason := fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, syntaxMessage(body, se))
			return &fieldError{msg: "body: " + reason, pointer: "/", reason: reason}
		}
		// a lone surrogate is named before the error it caused: an
		// unknown member's name with one read as U+FFFD in the
		// message (a re-test, 2026-12-01); the value decoded is
		// valid JSON, so the check reads it
		if ptr, reason, ok := events.LoneSurrogate(body); ok {
			return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
		}
		var te *json.UnmarshalTypeError
		isType := errors.As(err, &te)
		berr := bodyError(err)
		var fe *fieldError
		if !errors.As(berr, &fe) {
			return berr
		}
		switch {
		case isType && fe.pointer != "/":
			// where the value that did not fit is in the body: the Go
			// field path has no array index
			fe.pointer = events.PointerAt(body, te.Offset)
		case strings.HasPrefix(fe.reason, "unknown field"):
			// encoding/json names the field, not where it is: the first
			// member that is no field, when it is that one
			name, _ := strconv.Unquote(strings.TrimPrefix(fe.reason, "unknown field "))
			if ptr, n, ok := inexactMember(body, reflect.TypeOf(v)); ok && n == name {
				fe.pointer = ptr
			}
		}
		return berr
	}
	if err := endOfBody(dec); err != nil {
		return err
	}
	if ptr, reason, ok := events.RepeatedMember(body); ok {
		return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
	}
	if ptr, reason, ok := events.LoneSurrogate(body); ok {
		return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
	}
	if ptr, name, ok := inexactMember(body, reflect.TypeOf(v)); ok {
		reason := fmt.Sprintf("unknown field %q (member names are case-sensitive)", name)
		return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
	}
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		if ptr, reason, ok := nullMember(body, t.Elem()); ok {
			return &fieldError{msg: fmt.Sprintf("body: %s: %s", ptr, reason), pointer: ptr, reason: reason}
		}
	}
	return nil
}

// fieldError is a body error about one member: its JSON pointer and the
// reason besides the message, which writeBodyErr answers in the error
// body's pointer and reason, as POST /v1/events' 400 has them (a new
// user's walkthrough, 2026-11-30: POST /v1/memories named /tags/0 and
// /title so, but not an unknown field or a value of the wrong type).
type fieldError struct {
	msg, pointer, reason string
}

func (e *fieldError) Error() string { return e.msg }

// writeBodyErr answers a decodeBody or decodeRead error: its status
// (bodyStatus), its message followed by more (a route's hint), and for a
// fieldError the pointer and the reason.
func writeBodyErr(w http.ResponseWriter, err error, more string) {
	var fe *fieldError
	if errors.As(err, &fe) {
		writeJSON(w, bodyStatus(err), errorBody{Error: err.Error() + more, Pointer: fe.pointer, Reason: fe.reason})
		return
	}
	writeErr(w, bodyStatus(err), "%v%s", err, more)
}

// objectTarget reports whether v points to a struct or a map, a value a
// JSON object decodes into (a null body for it is refused).
func objectTarget(v any) bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	k := t.Elem().Kind()
	return k == reflect.Struct || k == reflect.Map
}

// endOfBody fails when dec holds more than the value it decoded.
func endOfBody(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &fieldError{msg: "body: one JSON object expected, found more after it", pointer: "/", reason: "one JSON object expected, found more after it"}
	}
	return nil
}

// errBodyTooLarge is wrapped by bodyError's error for a body above
// MaxBodyBytes: bodyStatus answers 413 for it.
var errBodyTooLarge = errors.New("request entity too large")

// bodyStatus is the status for a decodeBody or bodyError error: 413 for a
// body above MaxBodyBytes (as POST /v1/events answers; the write routes
// answered 400), else 400.
func bodyStatus(err error) int {
	if errors.Is(err, errBodyTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// bodyError rewrites encoding/json's decode errors to name the field.
func bodyError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return &fieldError{msg: "body: empty, a JSON object expected", pointer: "/", reason: "empty, a JSON object expected"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		// a truncated body: it was "body: unexpected EOF", without a
		// pointer or reason (a walkthrough's finding)
		return &fieldError{msg: "body: not valid JSON: it ends before its value is complete (unexpected EOF)", pointer: "/", reason: "not valid JSON: it ends before its value is complete"}
	case errors.As(err, &te):
		want := jsonKind(te.Type.Kind().String())
		reason := fmt.Sprintf("got %s, want %s", te.Value, want)
		if lit, ok := strings.CutPrefix(te.Value, "number"); ok && (want == "integer" || want == "number") {
			// a number the field cannot hold for its range, not its type,
			// is told so ("got number, want number" for 1e400 before)
			switch lit = strings.TrimSpace(lit); {
			case want == "integer" && strings.ContainsAny(lit, ".eE"):
				// a fraction or an exponent for an integer: say how to
				// write it, as the producer path does (1.0 read "got
				// number 1.0, want integer": a re-test, 2026-12-01)
				if f, err := strconv.ParseFloat(lit, 64); err == nil && f == math.Trunc(f) {
					reason = fmt.Sprintf("got number %s, want integer: write it without a fraction or an exponent (1, not 1.0 or 1e0)", lit)
				}
			case lit == "":
				reason = fmt.Sprintf("got a number out of the range of a %d-bit %s", te.Type.Bits(), want)
			default:
				reason = fmt.Sprintf("got number %s, out of the range of a %d-bit %s", lit, te.Type.Bits(), want)
			}
		}
		if te.Field == "" {
			return &fieldError{msg: "body: " + reason, pointer: "/", reason: reason}
		}
		f := jsonField(te.Field)
		return &fieldError{msg: fmt.Sprintf("body: %q: %s", f, reason), pointer: "/" + strings.ReplaceAll(pointerToken(f), ".", "/"), reason: reason}
	case errors.As(err, &se):
		reason := fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error())
		return &fieldError{msg: "body: " + reason, pointer: "/", reason: reason}
	case errors.As(err, &mbe):
		return fmt.Errorf("body: larger than %d bytes: %w", MaxBodyBytes, errBodyTooLarge)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &fieldError{msg: "body: unknown field " + f, reason: "unknown field " + f}
	}
	return fmt.Errorf("body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind as the JSON type it decodes from.
func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return k
}

// jsonField is the JSON path of an UnmarshalTypeError's Field, without
// the names of embedded Go structs it holds ("Record.tags" → "tags"): the
// API's JSON names are lower-case, Go's exported struct names are not.
func jsonField(f string) string {
	parts := strings.Split(f, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return f
	}
	return strings.Join(kept, ".")
}

// syntaxReason says where the JSON document body (as received: white space
// included) stops being valid JSON: "not valid JSON at byte 17 (line 2,
// column 5): invalid character …", in encoding/json's own words, with the
// position of the byte it refused counted from 1 (the byte is
// json.SyntaxError's Offset; the column counts characters in its line).
// A body that is valid JSON gives "not valid JSON" alone (never asked of
// one). Before, POST /v1/events said "body is not valid JSON" without the
// position, and a producer looking for the fault in a batch of a few
// hundred events had to find it by hand (a walkthrough's finding).
func syntaxReason(body []byte) string {
	if bytes.HasPrefix(body, utf8BOM) {
		return bomReason
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(body, new(json.RawMessage)); !errors.As(err, &se) {
		return "not valid JSON"
	}
	before := body[:min(int(se.Offset), len(body))]
	line := 1 + bytes.Count(before, []byte{'\n'})
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return fmt.Sprintf("not valid JSON at byte %d (line %d, column %d): %s", se.Offset, line, col, syntaxMessage(body, se))
}

// utf8BOM is U+FEFF, the byte order mark, in UTF-8.
var utf8BOM = []byte("\ufeff")

// bomReason is the refusal of a body that starts with a byte order mark.
const bomReason = "not valid JSON: the body starts with a UTF-8 byte order mark (U+FEFF), which a JSON text sent over a network must not have (RFC 8259, section 8.1): send it without one"

// syntaxMessage is se's message with the character it stopped at named as
// the body has it: encoding/json quotes the byte at se.Offset as if it
// were Latin-1, so 東 (E6 9D B1) was "invalid character 'æ'". A byte that
// starts no UTF-8 character is named by its value.
func syntaxMessage(body []byte, se *json.SyntaxError) string {
	msg := se.Error()
	at := int(se.Offset) - 1
	if at < 0 || at >= len(body) || body[at] < utf8.RuneSelf {
		return msg
	}
	// as encoding/json quotes the byte
	q := strconv.Quote(string(rune(body[at])))
	wrong := "'" + q[1:len(q)-1] + "'"
	r, size := utf8.DecodeRune(body[at:])
	right := fmt.Sprintf("the byte 0x%02X, which starts no UTF-8 character", body[at])
	if r != utf8.RuneError || size > 1 {
		right = fmt.Sprintf("%s (%U)", strconv.QuoteRuneToGraphic(r), r)
	}
	return strings.Replace(msg, wrong, right, 1)
}
