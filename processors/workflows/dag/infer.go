package dag

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Infer returns a JSON Schema (draft 2020-12 vocabulary, as
// github.com/google/jsonschema-go represents it) describing every JSON
// document of samples, merged the way GenSON merges instances (no kept Go
// library infers schemas from instances, so this is our own, small):
//
//   - the type of a value is null, boolean, integer (a number written
//     without '.' or exponent), number, string, array or object; a
//     property seen with several types gets them all (Types), integer
//     folding into number when both occur;
//   - an object's properties are the union over the samples, each
//     property's schema merged from every value it had; required lists the
//     properties present in every sample of that object;
//   - an array's items schema is merged from every element of every
//     sample (so a list of flights gives one flight schema);
//   - samples that are not JSON are strings.
//
// Infer(nil) is nil. Cost: linear in the total size of the samples.
func Infer(samples []json.RawMessage) *jsonschema.Schema {
	if len(samples) == 0 {
		return nil
	}
	n := &node{}
	for _, raw := range samples {
		v, ok := decode(raw)
		if !ok {
			v = string(raw)
		}
		n.add(v)
	}
	return n.schema()
}

// node accumulates what was seen at one place of the documents.
type node struct {
	types   []string
	objects int              // object values seen here
	props   map[string]*node // their properties
	present map[string]int   // in how many of those objects each property was
	items   *node            // elements of the arrays seen here
}

func (n *node) add(v any) {
	n.types = append(n.types, typeOf(v))
	switch x := v.(type) {
	case map[string]any:
		n.objects++
		if n.props == nil {
			n.props, n.present = map[string]*node{}, map[string]int{}
		}
		for k, pv := range x {
			if n.props[k] == nil {
				n.props[k] = &node{}
			}
			n.props[k].add(pv)
			n.present[k]++
		}
	case []any:
		for _, it := range x {
			if n.items == nil {
				n.items = &node{}
			}
			n.items.add(it)
		}
	}
}

func (n *node) schema() *jsonschema.Schema {
	s := &jsonschema.Schema{}
	setTypes(s, n.types)
	if n.props != nil {
		s.Properties = map[string]*jsonschema.Schema{}
		for k, p := range n.props {
			s.Properties[k] = p.schema()
			if n.present[k] == n.objects {
				s.Required = append(s.Required, k)
			}
		}
		slices.Sort(s.Required)
	}
	if n.items != nil {
		s.Items = n.items.schema()
	}
	return s
}

func decode(raw json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// typeOf is the JSON Schema type name of a decoded value.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// types returns the types of s (Type or Types).
func types(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func setTypes(s *jsonschema.Schema, ts []string) {
	if slices.Contains(ts, "integer") && slices.Contains(ts, "number") {
		ts = slices.DeleteFunc(ts, func(t string) bool { return t == "integer" })
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	s.Type, s.Types = "", nil
	if len(ts) == 1 {
		s.Type = ts[0]
	} else {
		s.Types = ts
	}
}
