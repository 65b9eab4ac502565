package events

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/valyala/fastjson"
)

// The data check of parseFast.
//
// parseFast used to convert an event's data into the `any` form the JSON
// Schema validator reads and run the validator on it: 12–14% of a replay's
// CPU (chronicle bench, -tagfocus job=replay), most of it building maps
// and running the validator's generic machinery on a handful of members.
// A fastSchema is the same compiled schema (the validator's own
// *jsonschema.Schema, so $ref, if/then/else and the bounds are those the
// validator resolved) evaluated directly on the fastjson parse.
//
// It answers yes only when the validator would accept the data: every
// keyword it does not evaluate (format, uniqueItems, oneOf, not,
// patternProperties, …), a numeric bound that is not exactly a float64, a
// number that equals its bound as a float64, an integer written with a
// fraction or an exponent, an enum of other than strings, booleans and
// null, make its answer "unsure", and parseFast then runs the validator as
// before (FuzzFastParseAgrees and TestFastSchemaAgrees hold it to that).
// Repeated member names, which the generic path decides, are found by
// dupFree before the check.

// verdict is a fastSchema's answer: yes (valid), no (invalid) or unsure
// (the validator decides).
type verdict int8

const (
	unsure verdict = iota
	yes
	no
)

// and combines the verdicts of two keywords of one schema.
func (v verdict) and(w verdict) verdict {
	switch {
	case v == no || w == no:
		return no
	case v == unsure || w == unsure:
		return unsure
	}
	return yes
}

// JSON types of a fastSchema's type keyword (bit set).
const (
	ftNull = 1 << iota
	ftBoolean
	ftNumber
	ftInteger
	ftString
	ftArray
	ftObject
)

var typeBits = map[string]uint8{"null": ftNull, "boolean": ftBoolean, "number": ftNumber, "integer": ftInteger,
	"string": ftString, "array": ftArray, "object": ftObject}

// fastSchema is a compiled JSON Schema node (see the comment above).
type fastSchema struct {
	unsure   bool  // a keyword fastSchema does not evaluate
	boolean  *bool // a boolean schema
	ref      *fastSchema
	allOf    []*fastSchema
	anyOf    []*fastSchema
	ifS      *fastSchema
	thenS    *fastSchema
	elseS    *fastSchema
	types    uint8 // 0: any type
	enum     []any // enum or const (a one-value enum), strings, booleans and nil only
	hasEnum  bool
	required []string
	props    map[string]*fastSchema
	noAddl   bool        // additionalProperties: false
	addl     *fastSchema // additionalProperties as a schema
	minItems int         // -1: none
	maxItems int
	items    *fastSchema
	minLen   int // -1: none
	maxLen   int
	pattern  jsonschema.Regexp
	min, max float64 // inclusive bounds, exact as float64
	hasMin   bool
	hasMax   bool
}

// compileFast builds the fastSchema of s; memo holds the nodes built so
// far (a $ref cycle reuses its node).
func compileFast(s *jsonschema.Schema, memo map[*jsonschema.Schema]*fastSchema) *fastSchema {
	if f, ok := memo[s]; ok {
		return f
	}
	f := &fastSchema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	memo[s] = f
	if s.Bool != nil {
		f.boolean = s.Bool
		return f
	}
	if s.RecursiveRef != nil || s.DynamicRef != nil || s.Not != nil || len(s.OneOf) > 0 || s.Format != nil ||
		s.MaxProperties != nil || s.MinProperties != nil || s.PropertyNames != nil || len(s.PatternProperties) > 0 ||
		len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.Contains != nil || s.UniqueItems || s.Items != nil || s.AdditionalItems != nil || len(s.PrefixItems) > 0 || s.UnevaluatedItems != nil ||
		s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		s.ExclusiveMaximum != nil || s.ExclusiveMinimum != nil || s.MultipleOf != nil || len(s.Extensions) > 0 {
		f.unsure = true
		return f
	}
	if s.Ref != nil {
		f.ref = compileFast(s.Ref, memo)
	}
	for _, sub := range s.AllOf {
		f.allOf = append(f.allOf, compileFast(sub, memo))
	}
	for _, sub := range s.AnyOf {
		f.anyOf = append(f.anyOf, compileFast(sub, memo))
	}
	if s.If != nil {
		f.ifS = compileFast(s.If, memo)
		if s.Then != nil {
			f.thenS = compileFast(s.Then, memo)
		}
		if s.Else != nil {
			f.elseS = compileFast(s.Else, memo)
		}
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			f.types |= typeBits[t]
		}
	}
	var values []any
	switch {
	case s.Enum != nil:
		values, f.hasEnum = s.Enum.Values, true
	case s.Const != nil:
		values, f.hasEnum = []any{*s.Const}, true
	}
	for _, v := range values {
		switch v.(type) {
		case string, bool, nil:
			f.enum = append(f.enum, v)
		default:
			f.unsure = true
		}
	}
	f.required = s.Required
	if len(s.Properties) > 0 {
		f.props = make(map[string]*fastSchema, len(s.Properties))
		for name, sub := range s.Properties {
			f.props[name] = compileFast(sub, memo)
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		f.noAddl = !a
	case *jsonschema.Schema:
		f.addl = compileFast(a, memo)
	default:
		f.unsure = true
	}
	if s.MinItems != nil {
		f.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		f.maxItems = *s.MaxItems
	}
	if s.Items2020 != nil {
		f.items = compileFast(s.Items2020, memo)
	}
	if s.MinLength != nil {
		f.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		f.maxLen = *s.MaxLength
	}
	f.pattern = s.Pattern
	var exact bool
	if s.Minimum != nil {
		if f.min, exact = s.Minimum.Float64(); !exact {
			f.unsure = true
		}
		f.hasMin = true
	}
	if s.Maximum != nil {
		if f.max, exact = s.Maximum.Float64(); !exact {
			f.unsure = true
		}
		f.hasMax = true
	}
	return f
}

// check evaluates f on v.
func (f *fastSchema) check(v *fastjson.Value) verdict {
	switch {
	case f.unsure:
		return unsure
	case f.boolean != nil:
		if *f.boolean {
			return yes
		}
		return no
	}
	r := yes
	if f.ref != nil {
		if r = r.and(f.ref.check(v)); r == no {
			return no
		}
	}
	for _, sub := range f.allOf {
		if r = r.and(sub.check(v)); r == no {
			return no
		}
	}
	if len(f.anyOf) > 0 {
		some := no // yes when one of them holds
		for _, sub := range f.anyOf {
			if c := sub.check(v); c == yes {
				some = yes
				break
			} else if c == unsure {
				some = unsure
			}
		}
		if r = r.and(some); r == no {
			return no
		}
	}
	if f.ifS != nil {
		var branch *fastSchema
		switch f.ifS.check(v) {
		case unsure:
			return unsure
		case yes:
			branch = f.thenS
		default:
			branch = f.elseS
		}
		if branch != nil {
			if r = r.and(branch.check(v)); r == no {
				return no
			}
		}
	}
	t := v.Type()
	if f.types != 0 {
		if r = r.and(f.typeOK(v, t)); r == no {
			return no
		}
	}
	if f.hasEnum {
		if r = r.and(f.enumOK(v, t)); r == no {
			return no
		}
	}
	switch t {
	case fastjson.TypeObject:
		r = r.and(f.objectOK(v))
	case fastjson.TypeArray:
		r = r.and(f.arrayOK(v))
	case fastjson.TypeString:
		r = r.and(f.stringOK(v.GetStringBytes()))
	case fastjson.TypeNumber:
		r = r.and(f.numberOK(v))
	}
	return r
}

func (f *fastSchema) typeOK(v *fastjson.Value, t fastjson.Type) verdict {
	var bit uint8
	switch t {
	case fastjson.TypeNull:
		bit = ftNull
	case fastjson.TypeTrue, fastjson.TypeFalse:
		bit = ftBoolean
	case fastjson.TypeString:
		bit = ftString
	case fastjson.TypeArray:
		bit = ftArray
	case fastjson.TypeObject:
		bit = ftObject
	case fastjson.TypeNumber:
		if f.types&ftNumber != 0 {
			return yes
		}
		if f.types&ftInteger == 0 {
			return no
		}
		var buf [32]byte
		if bytes.ContainsAny(v.MarshalTo(buf[:0]), ".eE") {
			return unsure // 1.0 is an integer to JSON Schema: the validator decides
		}
		return yes
	}
	if f.types&bit != 0 {
		return yes
	}
	return no
}

func (f *fastSchema) enumOK(v *fastjson.Value, t fastjson.Type) verdict {
	for _, e := range f.enum {
		switch e := e.(type) {
		case string:
			if t == fastjson.TypeString && string(v.GetStringBytes()) == e {
				return yes
			}
		case bool:
			if e && t == fastjson.TypeTrue || !e && t == fastjson.TypeFalse {
				return yes
			}
		case nil:
			if t == fastjson.TypeNull {
				return yes
			}
		}
	}
	if t == fastjson.TypeNumber || t == fastjson.TypeObject || t == fastjson.TypeArray {
		return unsure // only strings, booleans and null are compared here
	}
	return no
}

func (f *fastSchema) objectOK(v *fastjson.Value) verdict {
	o, _ := v.Object()
	for _, name := range f.required {
		if o.Get(name) == nil {
			return no
		}
	}
	if f.props == nil && !f.noAddl && f.addl == nil {
		return yes
	}
	r := yes
	o.Visit(func(k []byte, x *fastjson.Value) {
		if r == no {
			return
		}
		if sub, ok := f.props[string(k)]; ok {
			r = r.and(sub.check(x))
			return
		}
		switch {
		case f.noAddl:
			r = no
		case f.addl != nil:
			r = r.and(f.addl.check(x))
		}
	})
	return r
}

func (f *fastSchema) arrayOK(v *fastjson.Value) verdict {
	a, _ := v.Array()
	if f.minItems >= 0 && len(a) < f.minItems || f.maxItems >= 0 && len(a) > f.maxItems {
		return no
	}
	r := yes
	if f.items != nil {
		for _, x := range a {
			if r = r.and(f.items.check(x)); r == no {
				return no
			}
		}
	}
	return r
}

func (f *fastSchema) stringOK(s []byte) verdict {
	if f.minLen >= 0 || f.maxLen >= 0 {
		n := utf8.RuneCount(s)
		if f.minLen >= 0 && n < f.minLen || f.maxLen >= 0 && n > f.maxLen {
			return no
		}
	}
	if f.pattern != nil && !f.pattern.MatchString(string(s)) {
		return no
	}
	return yes
}

// numberOK checks the inclusive bounds. A bound b is exactly a float64
// (compileFast), and rounding a decimal to the nearest float64 is
// monotonic, so fl(x) > b means x > b and fl(x) < b means x < b;
// fl(x) = b means x = b when x is a small integer (smallInteger), and
// otherwise leaves the comparison to the validator's exact arithmetic.
func (f *fastSchema) numberOK(v *fastjson.Value) verdict {
	if !f.hasMin && !f.hasMax {
		return yes
	}
	var buf [32]byte
	text := v.MarshalTo(buf[:0])
	x, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(x, 0) {
		return unsure
	}
	if (f.hasMin && x == f.min || f.hasMax && x == f.max) && !smallInteger(text) {
		return unsure // equal as float64, maybe not as decimals
	}
	if f.hasMin && x < f.min || f.hasMax && x > f.max {
		return no
	}
	return yes
}

// smallInteger reports whether text is an integer literal of at most 15
// digits, which a float64 holds exactly.
func smallInteger(text []byte) bool {
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	if len(text) == 0 || len(text) > 15 {
		return false
	}
	for _, c := range text {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// dupFree reports whether no object in v repeats a member name, not
// looking inside the top-level members listed in skip (dataOf's opaque
// members, which it does not convert either).
func dupFree(v *fastjson.Value, skip map[string]fastjson.Type) bool {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		ok := true
		var seen map[string]struct{}
		var first [16][]byte
		n := 0
		o.Visit(func(k []byte, x *fastjson.Value) {
			if !ok {
				return
			}
			if n < len(first) {
				for _, p := range first[:n] {
					if bytes.Equal(p, k) {
						ok = false
						return
					}
				}
				first[n] = k
			} else {
				if seen == nil {
					seen = make(map[string]struct{}, 2*n)
					for _, p := range first {
						seen[string(p)] = struct{}{}
					}
				}
				if _, dup := seen[string(k)]; dup {
					ok = false
					return
				}
				seen[string(k)] = struct{}{}
			}
			n++
			if t, opaque := skip[string(k)]; opaque && x.Type() == t {
				return
			}
			ok = dupFree(x, nil)
		})
		return ok
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, x := range a {
			if !dupFree(x, nil) {
				return false
			}
		}
	}
	return true
}
