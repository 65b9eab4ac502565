package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
)

// HTTP protocol binding of CloudEvents 1.0
// (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md):
// POST /v1/events accepts the three content modes.

// ContentTypeBatch is the media type of the CloudEvents batched content
// mode: a JSON array of events in the JSON format (events.ContentTypeBatch).
const ContentTypeBatch = events.ContentTypeBatch

// contentMode is how a request carries its events.
type contentMode int

const (
	// modePlain: Content-Type application/json (or none) and no ce-
	// headers: one event object or an array of them (Chronicle's own form).
	modePlain contentMode = iota
	// modeStructured: application/cloudevents+json, one event object.
	modeStructured
	// modeBatched: application/cloudevents-batch+json, an array of events.
	modeBatched
	// modeBinary: the attributes in ce- headers, the data as the body with
	// its Content-Type (application/json).
	modeBinary
)

// binaryHeaderPrefix starts the header of a context attribute in binary mode.
const binaryHeaderPrefix = "ce-"

// hasBinaryHeaders reports whether r carries any ce- header.
func hasBinaryHeaders(r *http.Request) bool {
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), binaryHeaderPrefix) {
			return true
		}
	}
	return false
}

// modeOf is the content mode of r: the structured and batched media types
// decide; otherwise ce- headers mean binary mode.
func modeOf(r *http.Request) contentMode {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case events.ContentTypeCloudEvents:
		return modeStructured
	case ContentTypeBatch:
		return modeBatched
	}
	if hasBinaryHeaders(r) {
		return modeBinary
	}
	return modePlain
}

// inputError is a 400 of POST /v1/events found before the events
// themselves are validated (the body's form, a binary-mode header). Like
// an events.ValidationError it has the documented fields: Index, the
// event's position in the request (0 for the one event of binary mode,
// as ParseBatch numbers a single event), or -1 when the error is about
// the body as a whole (not JSON, the wrong form for the content mode);
// Pointer, the JSON pointer of the field in the event's CloudEvents JSON form ("/" for the whole body); Reason, why. Msg is the
// error's text, which names the mode and, in binary mode, the header.
type inputError struct {
	Index   int
	Pointer string
	Reason  string
	Msg     string
}

func (e *inputError) Error() string { return e.Msg }

// bodyInputError is an inputError about the body as a whole: index -1,
// pointer "/", the message prefixed to the reason.
func bodyInputError(prefix, reason string) *inputError {
	msg := reason
	if prefix != "" {
		msg = prefix + ": " + reason
	}
	return &inputError{Index: -1, Pointer: "/", Reason: reason, Msg: msg}
}

// binaryInputError is an inputError about binary mode's one event (index
// 0): the attribute at pointer, from the header named in the message.
func binaryInputError(pointer, reason string) *inputError {
	return &inputError{Index: 0, Pointer: pointer, Reason: reason, Msg: "binary mode: " + reason}
}

// requestEvents splits the body of a POST /v1/events into the events'
// CloudEvents JSON forms, by content mode. Its errors are *inputError;
// their text names the mode and, in binary mode, the header.
func requestEvents(r *http.Request, mode contentMode, body []byte) ([][]byte, error) {
	switch mode {
	case modeBinary:
		raw, err := binaryEvent(r.Header, body)
		if err != nil {
			return nil, err
		}
		return [][]byte{raw}, nil
	case modeStructured:
		if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
			return nil, bodyInputError("structured mode ("+events.ContentTypeCloudEvents+")", "the body must be one event (a JSON object); send an array as "+ContentTypeBatch)
		}
	case modeBatched:
		if b := bytes.TrimSpace(body); len(b) > 0 && b[0] != '[' {
			return nil, bodyInputError("batched mode ("+ContentTypeBatch+")", "the body must be a JSON array of events")
		}
	}
	return splitBody(body)
}

// binaryEvent builds the CloudEvents JSON form of a binary-mode request:
// every ce-<name> header is the attribute <name> (lower-cased,
// percent-decoded as the binding requires), the body is data. Its errors
// are *inputError whose pointer is the attribute the header maps to
// (header ce-<name> → /<name>, e.g. ce-id → /id; the body → /data).
func binaryEvent(h http.Header, body []byte) ([]byte, error) {
	attrs := map[string]any{}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, binaryHeaderPrefix) {
			continue
		}
		name := strings.TrimPrefix(lk, binaryHeaderPrefix)
		ptr := "/" + name
		if name == "data" || name == "data_base64" {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: data is the body, not a header", lk))
		}
		if len(h[k]) > 1 {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: sent %d times, an attribute has one value", lk, len(h[k])))
		}
		// the binding: first undo RFC 7230 quoted strings (a receiver
		// MUST, for senders of older versions), then one round of
		// percent-decoding
		v, err := unquoteHeaderValue(h[k][0])
		if err != nil {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: %v", lk, err))
		}
		v, err = url.PathUnescape(v)
		if err != nil {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: not a valid percent-encoded value: %v", lk, err))
		}
		// JSON encoding replaces invalid UTF-8 with U+FFFD, so ce-id %FF
		// and %FE would become one id: two events, one idempotency key
		// (the second answered 202, then dead-lettered as a conflicting
		// duplicate). Kafka binary mode refuses such a header too.
		if !utf8.ValidString(v) {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: not valid UTF-8 once percent-decoded", lk))
		}
		if _, dup := attrs[name]; dup {
			return nil, binaryInputError(ptr, fmt.Sprintf("header %s: sent twice", lk))
		}
		attrs[name] = v
	}
	for _, req := range []string{"specversion", "id", "source", "type"} {
		if _, ok := attrs[req]; !ok {
			// the header ce-<req> is the attribute /<req> (ce-id: /id)
			return nil, binaryInputError("/"+req, fmt.Sprintf("header %s%s is missing (a required attribute)", binaryHeaderPrefix, req))
		}
	}
	// without a Content-Type header the event has no datacontenttype (the
	// binding maps one to the other; before, application/json was
	// stored: a conformance check), and its data is JSON all the same
	dct := ""
	if ct := h.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != events.ContentTypeJSON {
			return nil, binaryInputError("/datacontenttype", fmt.Sprintf("header Content-Type: %q: the body (data) must be application/json", ct))
		}
		// the binding: datacontenttype MUST be populated from the
		// Content-Type header, so its parameters (charset=utf-8, as in
		// the binding's own example) are kept as structured mode keeps
		// them; before, every binary event said plain application/json
		dct = strings.TrimSpace(ct)
	}
	// a ce-datacontenttype header, which the binding does not use, is kept
	// as sent, so the envelope schema judges it as in structured mode
	// (anything but application/json: 400 naming the header)
	if _, ok := attrs["datacontenttype"]; !ok && dct != "" {
		attrs["datacontenttype"] = dct
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return nil, binaryInputError("/data", "the body (data) is empty; it must be the event's data, a JSON object")
	}
	if !json.Valid(b) {
		return nil, binaryInputError("/data", "the body (data) is "+syntaxReason(body))
	}
	attrs["data"] = json.RawMessage(b)
	return json.Marshal(attrs)
}

// unquoteHeaderValue undoes the RFC 7230 (section 3.2.6) quoted strings
// of a binary-mode header value, as the CloudEvents HTTP binding requires
// of a receiver before percent-decoding ("MUST be supported when receiving
// events, for compatibility with older versions of this specification"):
// ce-subject: "hello world" is the subject hello world, and a backslash
// inside quotes escapes the next character. Before, the quotes were kept
// as part of the value (ce-specversion: "1.0" was a 400). A value without
// a double quote is returned as it is.
func unquoteHeaderValue(v string) (string, error) {
	if !strings.Contains(v, `"`) {
		return v, nil
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			quoted = !quoted
		case quoted && c == '\\':
			if i+1 == len(v) {
				return "", errors.New("a backslash ends the value inside a quoted string")
			}
			i++
			b.WriteByte(v[i])
		default:
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", errors.New("a quoted string is not closed (RFC 7230 section 3.2.6)")
	}
	return b.String(), nil
}

// binaryModeError rewrites a validation error of a binary-mode event so
// it names the header (or the body) the attribute came from.
func binaryModeError(ve *events.ValidationError) string {
	p := strings.TrimPrefix(ve.Pointer, "/")
	switch {
	case p == "data" || strings.HasPrefix(p, "data/"):
		return fmt.Sprintf("binary mode: the body (data) at /%s: %s", p, ve.Reason)
	case p == "" || strings.Contains(p, "/"):
		return fmt.Sprintf("binary mode: %s: %s", ve.Pointer, ve.Reason)
	}
	return fmt.Sprintf("binary mode: header %s%s: %s", binaryHeaderPrefix, p, ve.Reason)
}
