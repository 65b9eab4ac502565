package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// nullMember reports the first member or element of body whose value is
// null where its Go field cannot tell null from absent: a string, a
// number, a boolean or a struct (encoding/json leaves it as it was, so
// {"intent": null} was read as no intent). A pointer, a slice, a map, an
// interface and a type that decodes itself take null as they document it.
// Before, POST /v1/workflows/suggest took {"intent": null} and an
// estimate's {"seconds": null}, which its description refuses (a mutation
// test, 2026-12-03). body must have decoded into a value of type t already.
func nullMember(body []byte, t reflect.Type) (pointer, reason string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	p, r, found, _ := walkNull(dec, t, "")
	return p, r, found
}

// walkNull reads one value from dec, checking it against t (nil: any).
func walkNull(dec *json.Decoder, t reflect.Type, at string) (pointer, reason string, found bool, err error) {
	if t != nil && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", "", false, err
	}
	if tok == nil && t != nil && at != "" {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		default:
			return at, "got null, want " + kindName(t.Kind()) + " (leave the member out for its default)", true, nil
		}
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Interface {
		t = nil
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil {
			switch t.Kind() {
			case reflect.Struct:
				fields = fieldsOf(t)
			case reflect.Map:
				elem = t.Elem()
			}
		}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", "", false, err
			}
			key, _ := kt.(string)
			next := elem
			if fields != nil {
				next = fields[key] // nil for no field: decoding refused it already
			}
			if p, r, f, err := walkNull(dec, next, at+"/"+pointerToken(key)); f || err != nil {
				return p, r, f, err
			}
		}
		_, err = dec.Token() // '}'
		return "", "", false, err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if p, r, f, err := walkNull(dec, elem, at+"/"+strconv.Itoa(i)); f || err != nil {
				return p, r, f, err
			}
		}
		_, err = dec.Token() // ']'
		return "", "", false, err
	}
	return "", "", false, nil
}

// kindName is the JSON type a Go kind decodes from.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct:
		return "an object"
	case reflect.Array:
		return "an array"
	}
	return "a number"
}
