package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
)

// inexactMember returns the JSON pointer and name of the first object
// member of body whose name is not exactly one of the fields t decodes it
// into, ok false when there is none. encoding/json matches member names to
// fields ignoring case, so {"title":"x","Title":"y"} set the title to y
// and a lone "Title" was taken for "title": a second member the repeat
// check (events.RepeatedMember, exact names) did not see, and an unknown
// field the README says is a 400 (found by a review). Maps (any key), a
// type that decodes itself (json.Unmarshaler, encoding.TextUnmarshaler)
// and interface values are not looked into. body must have decoded into a
// value of type t already (malformed JSON is not reported here).
func inexactMember(body []byte, t reflect.Type) (pointer, name string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	p, n, found, _ := walkExact(dec, t, "")
	return p, n, found
}

// pointerToken escapes a member name as one JSON pointer reference token
// (RFC 6901: "~" as "~0", "/" as "~1").
func pointerToken(name string) string { return events.PointerToken(name) }

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walkExact reads one value from dec, checking it against t (nil: any).
func walkExact(dec *json.Decoder, t reflect.Type, at string) (pointer, name string, found bool, err error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) || t.Kind() == reflect.Interface) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", "", false, err
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
			ptr := at + "/" + pointerToken(key)
			next := elem
			if fields != nil {
				ft, exact := fields[key]
				if !exact {
					return ptr, key, true, nil
				}
				next = ft
			}
			if p, n, f, err := walkExact(dec, next, ptr); f || err != nil {
				return p, n, f, err
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
			if p, n, f, err := walkExact(dec, elem, at+"/"+strconv.Itoa(i)); f || err != nil {
				return p, n, f, err
			}
		}
		_, err = dec.Token() // ']'
		return "", "", false, err
	}
	return "", "", false, nil
}

// fieldsOf maps the member names a struct type decodes, as encoding/json
// names them (the json tag's name, else the field's; embedded structs
// without a tag name promote theirs), to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					add(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := out[name]; !dup { // the shallower field wins, as in encoding/json
				out[name] = ft
			}
		}
	}
	add(t)
	return out
}
