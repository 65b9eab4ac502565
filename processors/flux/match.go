package flux

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/valyala/fastjson"
)

// mismatch is one place where a call's inputs do not contain the expected
// arguments.
type mismatch struct {
	ptr    string // JSON pointer into the arguments
	reason string
}

func (m mismatch) String() string {
	p := m.ptr
	if p == "" {
		p = "/"
	}
	return p + ": " + m.reason
}

// decodeArgs decodes a JSON value keeping numbers exact; empty or null
// input decodes to nil (no expectation).
func decodeArgs(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if v, ok := decodeArgsFast(raw); ok {
		return v, nil
	}
	return decodeArgsStd(raw)
}

// decodeArgsStd is decodeArgs by encoding/json with UseNumber, for
// trimmed, non-empty raw: the reference decodeArgsFast agrees with.
func decodeArgsStd(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// decodeArgsFast is decodeArgs' result built from a fastjson parse, for
// the arguments where the two decoders cannot differ: valid JSON, valid
// UTF-8 and no escape at all (encoding/json replaces bad UTF-8 and lone
// surrogates, fastjson keeps them). ok is false for anything else, which
// encoding/json decodes as before; TestDecodeArgsFastAgrees and
// FuzzDecodeArgsFastAgrees hold the two to the same values. A decoder per
// call and its buffer cost more than the checks they ran (callDiff runs
// for every call of a criterion's tool).
func decodeArgsFast(raw []byte) (any, bool) {
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) || !gojson.Valid(raw) {
		return nil, false
	}
	p := argParsers.Get().(*fastjson.Parser)
	defer argParsers.Put(p)
	v, err := p.ParseBytes(raw)
	if err != nil {
		return nil, false
	}
	return fastValue(v), true
}

var argParsers = sync.Pool{New: func() any { return new(fastjson.Parser) }}

// fastValue is v as encoding/json decodes into an any with UseNumber:
// map[string]any (the last of repeated keys), []any, json.Number (the
// literal), string, bool or nil. Strings are copied out of the parser's
// memory.
func fastValue(v *fastjson.Value) any {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		m := make(map[string]any, o.Len())
		o.Visit(func(k []byte, e *fastjson.Value) { m[string(k)] = fastValue(e) })
		return m
	case fastjson.TypeArray:
		a, _ := v.Array()
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = fastValue(e)
		}
		return out
	case fastjson.TypeString:
		return string(v.GetStringBytes())
	case fastjson.TypeNumber:
		return json.Number(v.MarshalTo(nil))
	case fastjson.TypeTrue:
		return true
	case fastjson.TypeFalse:
		return false
	}
	return nil
}

// ArgNames returns the sorted member names of the JSON object args, the
// shape of a tool call without its values; nil when args is not a JSON
// object (invalid, null, an array or a scalar). Names are unescaped, as
// encoding/json decodes them into a map; repeated names appear once.
// Arguments that are valid JSON and valid UTF-8 without any escape are
// read with fastjson, everything else with encoding/json
// (TestArgNamesAgrees, FuzzArgNamesAgrees).
func ArgNames(args json.RawMessage) []string {
	var names []string
	if bytes.IndexByte(args, '\\') < 0 && utf8.Valid(args) && gojson.Valid(args) {
		p := argParsers.Get().(*fastjson.Parser)
		defer argParsers.Put(p)
		v, err := p.ParseBytes(args)
		if err == nil {
			if o, err := v.Object(); err == nil {
				names = make([]string, 0, o.Len())
				o.Visit(func(k []byte, _ *fastjson.Value) { names = append(names, string(k)) })
			}
			sort.Strings(names)
			return slices.Compact(names)
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return nil
	}
	names = make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Contains reports whether got contains want by the subset match of
// tool_call and no_other_calls checks: objects by key, recursively (got
// may have more keys); arrays element-wise with equal length; numbers
// numerically (250 equals 250.0); strings, booleans and null exactly.
// Both are JSON documents; empty want contains nothing and matches all.
func Contains(got, want json.RawMessage) bool {
	w, err := decodeArgs(want)
	if err != nil {
		return false
	}
	return len(callDiff(w, got)) == 0
}

// subsetDiff appends to out every place where got does not contain want.
// want is decoded with UseNumber; nil want at the top level is handled by
// the caller, nested nil means JSON null.
func subsetDiff(want, got any, ptr string, out *[]mismatch) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, mismatch{ptr, fmt.Sprintf("want an object, got %s", show(got))})
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := ptr + "/" + escapePtr(k)
			gv, ok := g[k]
			if !ok {
				*out = append(*out, mismatch{p, fmt.Sprintf("missing, want %s", show(w[k]))})
				continue
			}
			subsetDiff(w[k], gv, p, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, mismatch{ptr, fmt.Sprintf("want an array, got %s", show(got))})
			return
		}
		if len(g) != len(w) {
			*out = append(*out, mismatch{ptr, fmt.Sprintf("want %d elements, got %d", len(w), len(g))})
			return
		}
		for i := range w {
			subsetDiff(w[i], g[i], fmt.Sprintf("%s/%d", ptr, i), out)
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !numEqual(w, g) {
			*out = append(*out, mismatch{ptr, fmt.Sprintf("want %s, got %s", show(w), show(got))})
		}
	default: // string, bool, nil
		if want != got {
			*out = append(*out, mismatch{ptr, fmt.Sprintf("want %s, got %s", show(want), show(got))})
		}
	}
}

// numEqual compares two JSON numbers by value at 512-bit precision (a
// big.Float rather than a big.Rat, so a huge exponent cannot blow up
// memory), falling back to their text.
func numEqual(a, b json.Number) bool {
	x, _, errx := big.ParseFloat(string(a), 10, 512, big.ToNearestEven)
	y, _, erry := big.ParseFloat(string(b), 10, 512, big.ToNearestEven)
	if errx != nil || erry != nil {
		return a == b
	}
	return x.Cmp(y) == 0
}

func escapePtr(s string) string { return ptrEscaper.Replace(s) }

// ptrEscaper escapes a JSON Pointer reference token (RFC 6901): built
// once, as a Replacer builds its tables on first use.
var ptrEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// show renders a decoded JSON value for a detail, shortened.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return truncate(string(b), 60)
}
