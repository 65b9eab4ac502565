package flux

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

// decodeArgsSlow is decodeArgs without its fast path: encoding/json with
// UseNumber, the decoder the fast path must agree with.
func decodeArgsSlow(raw []byte) (any, error) {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 {
		return nil, nil
	}
	return decodeArgsStd(raw)
}

var argSeeds = []string{
	`{"reservation_id":"ABC123","cabin":"economy","passengers":[{"first_name":"Mia","dob":"1990-01-02"}],"amount":250.0,"n":-0,"e":1E5,"t":true,"f":false,"z":null}`,
	`{"a":1,"a":2}`, `[]`, `{}`, `null`, `"x"`, `12`, `[1,[2,[3,{}]]]`, `{"k":"\u00e9"}`, `{"k":"\ud800"}`,
	"{\"k\":\"\xff\"}", `{"k":1,}`, `01`, `1.`, `-`, `NaN`, `Infinity`, `{"a":1} {"b":2}`, `{"a":1} x`, ` {"a" : [ 1 , 2 ] } `,
	`{"a":"é ü 日本"}`, `[1e400]`, `{"":""}`, `tru`, `nul`, `[1,2`, `"\t"`, "\"\t\"",
}

// TestDecodeArgsFastAgrees holds decodeArgs (fast path included) to
// encoding/json's values and to its errors' presence on a sample of tool
// arguments, the repeats, escapes, bad UTF-8 and invalid JSON that must
// go to the slow path.
func TestDecodeArgsFastAgrees(t *testing.T) {
	for _, s := range argSeeds {
		checkDecodeArgs(t, []byte(s))
	}
	// the fast path must actually be taken for plain arguments
	if _, ok := decodeArgsFast([]byte(argSeeds[0])); !ok {
		t.Fatal("plain arguments did not take the fast path")
	}
}

func FuzzDecodeArgsFastAgrees(f *testing.F) {
	for _, s := range argSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodeArgs(t, raw) })
}

func checkDecodeArgs(t *testing.T, raw []byte) {
	t.Helper()
	got, gerr := decodeArgs(raw)
	want, werr := decodeArgsSlow(raw)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", raw, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, encoding/json %#v", raw, got, want)
	}
}

// argNamesSlow is ArgNames as encoding/json alone computes it.
func argNamesSlow(args []byte) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// TestArgNamesAgrees holds ArgNames (fast path included) to encoding/json's
// member names on the same sample as TestDecodeArgsFastAgrees.
func TestArgNamesAgrees(t *testing.T) {
	for _, s := range append(argSeeds, `{"b":1,"a":2,"b":3}`, `{"a\"b":1}`, `{"\u0061":1,"a":2}`) {
		checkArgNames(t, []byte(s))
	}
	if got := ArgNames([]byte(`{"b":1,"a":2,"b":3}`)); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("repeated names: %q", got)
	}
}

func FuzzArgNamesAgrees(f *testing.F) {
	for _, s := range argSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkArgNames(t, raw) })
}

func checkArgNames(t *testing.T, raw []byte) {
	t.Helper()
	if got, want := ArgNames(raw), argNamesSlow(raw); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %q, encoding/json %q", raw, got, want)
	}
}
