package events

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"sync"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/valyala/fastjson"
)

// The fast path of ParseEvent.
//
// Validating a consumed record used to cost about 21 µs on the tau-bench
// events (BenchmarkParseEvent): a generic decode of the whole event into
// `any` (9 µs), the CloudEvents envelope schema run on it (7 µs), the
// type's data schema (4 µs) and a typed decode (2.5 µs). parseFast keeps
// the part that carries information, the type's JSON Schema on data, and
// replaces the others:
//
//   - the envelope's schema (schemas/cloudevent.json) is checked by code,
//     attribute by attribute, on a fastjson parse of the event (fastjson
//     parses without allocating per value); only data is converted to the
//     `any` form the JSON Schema validator reads;
//   - the Envelope is filled from the same parse, data as its bytes were
//     sent (rawData); only an event with an escape outside data is decoded
//     again by the typed decoder, whose unescaping is the reference;
//   - an event the code does not accept as is goes to the generic path
//     (parseSlow), which decides and writes the error naming the field.
//
// So parseFast may only say yes where the generic path says yes, with the
// same Envelope: it accepts a subset (every attribute a string of the
// schema's bounds, no data_base64, no duplicate member names, the type
// registered) and FuzzFastParseAgrees and TestFastParseAgrees hold it to
// that. The JSON syntax check is encoding/json's own (json.Valid), the
// reference the generic path's decoders agree with.

var fastParsers = sync.Pool{New: func() any { return new(fastjson.Parser) }}

// attribute bits of the members parseFast has seen.
const (
	bitSpecVersion = 1 << iota
	bitID
	bitSource
	bitType
	bitSubject
	bitTime
	bitDataContentType
	bitDataSchema
	bitSessionID
	bitScope
	bitCausationID
	bitCorrelationID
	bitData
	bitCount = iota // attributes with a bit
)

// attributeBit is the bit of the attribute named k; known is false for
// any other name (a switch: a map lookup hashed every member's name).
func attributeBit(k []byte) (bit int, known bool) {
	switch string(k) {
	case "specversion":
		return bitSpecVersion, true
	case "id":
		return bitID, true
	case "source":
		return bitSource, true
	case "type":
		return bitType, true
	case "subject":
		return bitSubject, true
	case "time":
		return bitTime, true
	case "datacontenttype":
		return bitDataContentType, true
	case "dataschema":
		return bitDataSchema, true
	case "sessionid":
		return bitSessionID, true
	case "scope":
		return bitScope, true
	case "causationid":
		return bitCausationID, true
	case "correlationid":
		return bitCorrelationID, true
	case "data":
		return bitData, true
	}
	return 0, false
}

// parseFast returns the event and true when raw is an event the generic
// path accepts too; false means "not decided here" (the caller runs the
// generic path, which gives the error). With alias, the event's Data may
// share raw's bytes (capacity capped, so an append does not reach past it).
// The string is the event's Key, computed on the way.
func parseFast(set *compiled, raw []byte, allowDerived, alias bool) (Envelope, string, bool) {
	if !utf8.Valid(raw) || !gojson.Valid(raw) {
		return Envelope{}, "", false
	}
	p := fastParsers.Get().(*fastjson.Parser)
	defer fastParsers.Put(p)
	v, err := p.ParseBytes(raw)
	if err != nil {
		return Envelope{}, "", false
	}
	obj, err := v.Object()
	if err != nil {
		return Envelope{}, "", false
	}
	var (
		seen    int
		bad     bool
		typ     string
		data    *fastjson.Value
		ext     map[string]any
		extSeen map[string]bool
		attrs   [bitCount]string // the string attributes, by bit index
	)
	obj.Visit(func(k []byte, val *fastjson.Value) {
		if bad {
			return
		}
		bit, known := attributeBit(k)
		if !known {
			name := string(k)
			if extSeen[name] || CheckAttributeName(name) != nil {
				bad = true
				return
			}
			if extSeen == nil {
				extSeen, ext = map[string]bool{}, map[string]any{}
			}
			extSeen[name] = true
			switch val.Type() {
			case fastjson.TypeString:
				ext[name] = string(val.GetStringBytes())
			case fastjson.TypeNumber:
				ext[name] = json.Number(val.MarshalTo(nil))
			case fastjson.TypeTrue:
				ext[name] = true
			case fastjson.TypeFalse:
				ext[name] = false
			default:
				bad = true
			}
			return
		}
		if seen&bit != 0 {
			bad = true // a repeated member: the generic path decides
			return
		}
		seen |= bit
		if bit == bitData {
			if val.Type() != fastjson.TypeObject {
				bad = true
			}
			data = val
			return
		}
		if val.Type() != fastjson.TypeString {
			bad = true
			return
		}
		s := val.GetStringBytes()
		attrs[bits.TrailingZeros(uint(bit))] = string(s)
		switch bit {
		case bitSpecVersion:
			bad = string(s) != SpecVersion
		case bitID:
			bad = !runesWithin(s, 1, 256)
		case bitSource:
			bad = !runesWithin(s, 1, 1024)
		case bitType:
			typ = string(s) // registered types match the schema's pattern (TestRegisteredTypesMatchPattern)
		case bitTime:
			bad = !commonDateTime(s) && set.dateTime.Validate(string(s)) != nil
		case bitDataContentType:
			bad = string(s) != ContentTypeJSON
		case bitDataSchema, bitCausationID, bitCorrelationID:
			bad = len(s) == 0
		case bitSubject:
			bad = !allowDerived && len(s) == 0 // a producer's empty subject: parseSlow refuses it
		case bitSessionID:
			bad = !runesWithin(s, 1, 512)
		case bitScope:
			bad = !scopePattern(s)
		}
	})
	const required = bitSpecVersion | bitID | bitSource | bitType | bitData
	if bad || seen&required != required {
		return Envelope{}, "", false
	}
	schema, ok := set.data[Type(typ)]
	if !ok || (!allowDerived && registry[Type(typ)].Derived) {
		return Envelope{}, "", false
	}
	if !dupFree(data, set.opaque[Type(typ)]) {
		return Envelope{}, "", false
	}
	if set.fast[Type(typ)].check(data) != yes {
		doc, ok := dataOf(data, set.opaque[Type(typ)])
		if !ok || schema.Validate(doc) != nil {
			return Envelope{}, "", false
		}
	}
	// the envelope from this parse's strings, and data's bytes as sent:
	// what the typed decode (encoding/json semantics) gives, but for
	// escapes, which it is left to (fastjson's unescaping of an invalid
	// \u sequence need not be encoding/json's)
	var env Envelope
	if start, end, ok := rawData(raw); ok && bytes.IndexByte(raw[:start], '\\') < 0 && bytes.IndexByte(raw[end:], '\\') < 0 {
		at := func(bit int) string { return attrs[bits.TrailingZeros(uint(bit))] }
		env = Envelope{SpecVersion: at(bitSpecVersion), ID: at(bitID), Source: at(bitSource), Type: Type(at(bitType)),
			Subject: at(bitSubject), Time: at(bitTime), DataContentType: at(bitDataContentType), DataSchema: at(bitDataSchema),
			SessionID: at(bitSessionID), Scope: at(bitScope), CausationID: at(bitCausationID), CorrelationID: at(bitCorrelationID),
			Data: raw[start:end:end]}
		if !alias {
			env.Data = bytes.Clone(env.Data)
		}
	} else if err := gojson.Unmarshal(raw, (*envelopeFields)(&env)); err != nil || string(env.Type) != typ {
		return Envelope{}, "", false
	}
	env.Extensions = ext
	// the record key's data member from this parse (dataString's answer:
	// data is an object without repeated names, utf8- and JSON-valid), but
	// for data with \u escapes, which dataString leaves to encoding/json
	lookup := func(raw []byte, name string) (string, bool, bool, bool) {
		if bytes.Contains(raw, []byte(`\u`)) {
			return dataString(raw, name)
		}
		switch m := data.Get(name); {
		case m == nil:
			return "", true, false, false
		case m.Type() == fastjson.TypeString:
			return string(m.GetStringBytes()), true, true, true
		case m.Type() == fastjson.TypeNull:
			return "", true, true, true
		}
		return "", true, true, false
	}
	key, err := keyWith(&env, lookup)
	if err != nil {
		return Envelope{}, "", false
	}
	if !allowDerived && env.Type == MemoryRecorded {
		if data.Get("initial_confidence") != nil || string(data.GetStringBytes("source")) == "distilled" && data.Get("source").Type() == fastjson.TypeString {
			return Envelope{}, "", false
		}
	}
	return env, key, true
}

// dataOf converts data as anyOf does, except that a member the type's
// schema constrains by its JSON type alone (opaque, from opaqueMembers)
// becomes an empty value of that type when it has it: the validator's
// verdict is the same, and the content, which can be most of the event
// (a minute's tool arguments and outputs), is not converted.
func dataOf(v *fastjson.Value, opaque map[string]fastjson.Type) (any, bool) {
	if len(opaque) == 0 {
		return anyOf(v)
	}
	o, _ := v.Object()
	m := make(map[string]any, o.Len())
	ok := true
	o.Visit(func(k []byte, x *fastjson.Value) {
		if !ok {
			return
		}
		if _, dup := m[string(k)]; dup {
			ok = false
			return
		}
		if t, isOpaque := opaque[string(k)]; isOpaque && x.Type() == t {
			if t == fastjson.TypeObject {
				m[string(k)] = map[string]any{}
			} else {
				m[string(k)] = []any{}
			}
			return
		}
		m[string(k)], ok = anyOf(x)
	})
	return m, ok
}

// opaqueMembers returns the members of a data schema (its raw JSON) that
// are constrained by their JSON type alone, object or array
// ({"type": "object"}, with a title or description at most), when the
// schema's root looks at member values only through "properties" (no
// if/then/else, no *Of, no schema-valued additionalProperties, no
// patternProperties or unevaluatedProperties): then the validator's
// verdict does not depend on what such a member holds.
func opaqueMembers(raw []byte) map[string]fastjson.Type {
	var root map[string]json.RawMessage
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	for k, v := range root {
		switch k {
		case "$schema", "$id", "title", "description", "type", "required", "properties", "$defs":
		case "additionalProperties":
			if string(v) != "false" && string(v) != "true" {
				return nil
			}
		default:
			return nil
		}
	}
	var props map[string]map[string]json.RawMessage
	if json.Unmarshal(root["properties"], &props) != nil {
		return nil
	}
	out := map[string]fastjson.Type{}
	for name, sub := range props {
		var typ string
		only := true
		for k, v := range sub {
			switch k {
			case "title", "description":
			case "type":
				if json.Unmarshal(v, &typ) != nil {
					only = false
				}
			default:
				only = false
			}
		}
		switch {
		case !only:
		case typ == "object":
			out[name] = fastjson.TypeObject
		case typ == "array":
			out[name] = fastjson.TypeArray
		}
	}
	return out
}

// anyOf converts a parsed JSON value to the form the JSON Schema validator
// reads (jsonschema.UnmarshalJSON's: maps, slices, json.Number, string,
// bool, nil). false on a repeated member name anywhere, which the generic
// path decides.
func anyOf(v *fastjson.Value) (any, bool) {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		m := make(map[string]any, o.Len())
		ok := true
		o.Visit(func(k []byte, x *fastjson.Value) {
			if !ok {
				return
			}
			if _, dup := m[string(k)]; dup {
				ok = false
				return
			}
			m[string(k)], ok = anyOf(x)
		})
		return m, ok
	case fastjson.TypeArray:
		a, _ := v.Array()
		out := make([]any, len(a))
		for i, x := range a {
			var ok bool
			if out[i], ok = anyOf(x); !ok {
				return nil, false
			}
		}
		return out, true
	case fastjson.TypeString:
		return string(v.GetStringBytes()), true
	case fastjson.TypeNumber:
		return json.Number(v.MarshalTo(nil)), true
	case fastjson.TypeTrue:
		return true, true
	case fastjson.TypeFalse:
		return false, true
	case fastjson.TypeNull:
		return nil, true
	}
	return nil, false
}

// runesWithin reports whether s has between lo and hi code points (JSON
// Schema's minLength/maxLength count code points).
func runesWithin(s []byte, lo, hi int) bool {
	if len(s) < lo {
		return false
	}
	if len(s) <= hi {
		return true // a code point is at least one byte
	}
	n := utf8.RuneCount(s)
	return n >= lo && n <= hi
}

// scopePattern is the envelope schema's scope rule,
// ^(project|team|org):[A-Za-z0-9._-]+$.
func scopePattern(s []byte) bool {
	var rest []byte
	switch {
	case len(s) > 8 && string(s[:8]) == "project:":
		rest = s[8:]
	case len(s) > 5 && string(s[:5]) == "team:":
		rest = s[5:]
	case len(s) > 4 && string(s[:4]) == "org:":
		rest = s[4:]
	default:
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// rawData returns where the value of the top-level member "data" starts and
// ends in raw, a valid JSON object whose members parseFast checked: exactly
// one named data, an object; the others strings, numbers or booleans. ok
// is false when it is not found by name as written (a member name with an
// escape).
func rawData(raw []byte) (start, end int, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, 0, false
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return 0, 0, false
		}
		k := i + 1
		i = skipString(raw, i)
		name := raw[k : i-1]
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != ':' {
			return 0, 0, false
		}
		i = skipSpace(raw, i+1)
		if string(name) == "data" {
			// data is an object; when it is the last member, it ends
			// before the object's closing brace (a member after it is an
			// extension attribute or another attribute: a string, number
			// or boolean, never ending in '}'), so its bytes, most of the
			// event, need no scan
			end := len(raw)
			for end > i && isSpace(raw[end-1]) {
				end--
			}
			end-- // the closing brace
			for end > i && isSpace(raw[end-1]) {
				end--
			}
			if end > i && raw[end-1] == '}' {
				return i, end, true
			}
			end = skipValue(raw, i)
			return i, end, end >= 0
		}
		i = skipValue(raw, i)
		if i < 0 {
			return 0, 0, false
		}
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != ',' {
			return 0, 0, false
		}
		i++
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipString returns the index after the string that starts at raw[i]
// (a '"').
func skipString(raw []byte, i int) int {
	for i++; i < len(raw); {
		q := bytes.IndexByte(raw[i:], '"') // most of data is strings: this is the hot loop
		if q < 0 {
			return len(raw)
		}
		i += q
		b := i - 1 // a quote after an odd number of backslashes is escaped
		for b >= 0 && raw[b] == '\\' {
			b--
		}
		if (i-1-b)%2 == 0 {
			return i + 1
		}
		i++
	}
	return len(raw)
}

// skipValue returns the index after the value that starts at raw[i], or
// -1 at the end of raw.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for i < len(raw) {
			switch raw[i] {
			case '"':
				i = skipString(raw, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(raw) { // a number or a literal
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return -1
}

// commonDateTime reports whether s is yyyy-mm-ddThh:mm:ss[.fraction](Z or
// ±hh:mm) with a date time.Parse accepts, an hour ≤ 23, minutes ≤ 59 and
// seconds ≤ 59: the common form of an RFC 3339 time, a subset of what the
// envelope schema's date-time format accepts (santhosh-tekuri/jsonschema's
// validateDateTime), checked without the validator, which cost 12% of the
// fast path. Anything else (a leap second, a lowercase t or z) goes to the
// validator.
func commonDateTime(s []byte) bool {
	if len(s) < 20 || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	if _, err := time.Parse("2006-01-02", string(s[:10])); err != nil {
		return false
	}
	if !twoDigits(s[11:], 23) || !twoDigits(s[14:], 59) || !twoDigits(s[17:], 59) {
		return false
	}
	rest := s[19:]
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' && twoDigits(rest[1:], 23) && twoDigits(rest[4:], 59)
}

// twoDigits reports whether b starts with two decimal digits of a value at
// most max.
func twoDigits(b []byte, max int) bool {
	return len(b) >= 2 && b[0] >= '0' && b[0] <= '9' && b[1] >= '0' && b[1] <= '9' && int(b[0]-'0')*10+int(b[1]-'0') <= max
}
