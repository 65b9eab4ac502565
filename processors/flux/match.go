package flux

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
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
