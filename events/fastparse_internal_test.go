package events

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unsafe"
)

// fastSeeds are the events of testdata: every type's valid instance and
// its invalid ones, the invalid envelopes, and variants of each valid one
// that stress what parseFast decides itself (extensions, escapes, bounds,
// repeated members, times).
func fastSeeds(t testing.TB) (valid, all [][]byte) {
	t.Helper()
	files, _ := filepath.Glob("testdata/types/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Valid   json.RawMessage `json:"valid"`
			Invalid []struct {
				Event json.RawMessage `json:"event"`
			} `json:"invalid"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(file, err)
		}
		valid = append(valid, doc.Valid)
		for _, iv := range doc.Invalid {
			all = append(all, iv.Event)
		}
	}
	b, err := os.ReadFile("testdata/envelope_invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	var inv []struct {
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatal(err)
	}
	for _, iv := range inv {
		all = append(all, iv.Event)
	}
	for _, v := range valid {
		s := string(v)
		body := strings.TrimSuffix(strings.TrimSpace(s), "}")
		for _, variant := range []string{
			body + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
			body + `,"n":12.50,"flag":false}`,
			body + `,"Bad_Name":"x"}`,
			body + `,"obj":{"a":1}}`,
			body + `,"id":"again"}`,
			body + `,"data_base64":"e30="}`,
			strings.Replace(s, `"2026-11-21T10:00:00Z"`, `"2026-02-30T10:00:00Z"`, 1),
			strings.Replace(s, `"2026-11-21T10:00:00Z"`, `"2026-11-21t10:00:00.123456+05:30"`, 1),
			strings.Replace(s, `"2026-11-21T10:00:00Z"`, `"2026-11-21T23:59:60Z"`, 1),
			strings.Replace(s, `"project:demo"`, `"project:dé"`, 1),
			strings.Replace(s, `"project:demo"`, `"project:"`, 1),
			strings.Replace(s, `"project:demo"`, `"project:a\u002fb"`, 1),
			strings.Replace(s, `"test/producer"`, `"t\u00e9st\/producer"`, 1),
			strings.Replace(s, `"test/producer"`, `""`, 1),
			strings.Replace(s, `"test/producer"`, `"`+strings.Repeat("é", 1025)+`"`, 1),
			strings.Replace(s, `"test/producer"`, `"`+strings.Repeat("é", 1024)+`"`, 1),
			strings.Replace(s, `"1.0"`, `1.0`, 1),
			strings.Replace(s, `"application/json"`, `"text/plain"`, 1),
			strings.Replace(s, `"data": {`, `"data": {"extra": 1, `, 1),
			strings.Replace(s, `"data": {`, `"data": {"k":1,"k":2, `, 1),
			strings.Replace(s, `"data": {`, `"data" : [ {`, 1) + "]",
			s + " ",
			s + "{}",
			strings.Replace(s, `"sessionid": "sess-1"`, `"sessionid": ""`, 1),
			// a minute's opaque data member: wrong JSON type, repeated names inside
			strings.Replace(s, `"data": {
    "content": "hi"
   }`, `"data": "hi"`, 1),
			strings.Replace(s, `"data": {
    "content": "hi"
   }`, `"data": [{"content": "hi"}]`, 1),
			strings.Replace(s, `"data": {
    "content": "hi"
   }`, `"data": {"content": "hi", "content": "again", "n": 1e400}`, 1),
		} {
			all = append(all, []byte(variant))
		}
	}
	return valid, append(all, valid...)
}

// checkAgrees fails when parseFast accepts what the generic path rejects,
// or decodes an envelope other than the generic path's.
func checkAgrees(t testing.TB, raw []byte) (fast bool) {
	set, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	for _, allowDerived := range []bool{false, true} {
		env, key, ok := parseFast(set, raw, allowDerived, allowDerived) // aliasing or not: the same envelope
		if !ok {
			continue
		}
		if !allowDerived && len(env.Data) > 0 && len(raw) > 0 {
			if p, r := uintptr(unsafe.Pointer(unsafe.SliceData(env.Data))), uintptr(unsafe.Pointer(unsafe.SliceData(raw))); p >= r && p < r+uintptr(len(raw)) {
				t.Fatalf("parseFast without alias returned data sharing the input's bytes:\n%s", raw)
			}
		}
		fast = true
		want, err := parseSlow(set, raw, allowDerived)
		if err != nil {
			t.Fatalf("parseFast accepted (derived allowed: %v) what the generic path rejects (%v):\n%s", allowDerived, err, raw)
		}
		if !reflect.DeepEqual(env, want) {
			t.Fatalf("parseFast decoded\n%#v\nthe generic path\n%#v\nfrom\n%s", env, want, raw)
		}
		// the key the fast path computes on its own parse (FromRecord
		// checks the record key against it) is Key's
		if wantKey, err := Key(&want); err != nil || key != wantKey {
			t.Fatalf("parseFast's key %q, Key %q (%v), from\n%s", key, wantKey, err, raw)
		}
	}
	return fast
}

func TestFastParseAgrees(t *testing.T) {
	valid, all := fastSeeds(t)
	for _, raw := range all {
		checkAgrees(t, raw)
	}
	// the fast path is the one taken on valid events
	for _, raw := range valid {
		if !checkAgrees(t, raw) {
			t.Errorf("parseFast left a valid event to the generic path:\n%s", raw)
		}
	}
}

// The minute's data member, most of a tau-bench event, is the one the fast
// path does not convert: its schema says only {"type": "object"}.
func TestOpaqueMembers(t *testing.T) {
	set, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.opaque[MinuteRecorded]["data"]; !ok {
		t.Fatalf("minute data is not opaque: %v", set.opaque[MinuteRecorded])
	}
	if got := opaqueMembers([]byte(`{"type":"object","properties":{"a":{"type":"object"}},"if":{"required":["a"]},"then":{}}`)); len(got) != 0 {
		t.Fatalf("a schema with if/then has opaque members %v", got)
	}
	for i := 0; i < 50; i++ { // whatever order the subschema's keywords come in
		if got := opaqueMembers([]byte(`{"type":"object","properties":{"a":{"required":["x"],"type":"object","properties":{}},"b":{"type":"array","description":"d"}}}`)); len(got) != 1 || got["b"] == 0 {
			t.Fatalf("opaque members %v, want only b", got)
		}
	}
}

// FuzzFastParseAgrees: on any input, parseFast either declines or gives the
// generic path's envelope (make fuzz).
func FuzzFastParseAgrees(f *testing.F) {
	_, all := fastSeeds(f)
	for _, raw := range all {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAgrees(t, raw) })
}

// parseFast takes a registered type as matching the envelope schema's type
// pattern without checking it: every registered type must.
func TestRegisteredTypesMatchPattern(t *testing.T) {
	b, ok := Schema("cloudevent")
	if !ok {
		t.Fatal("no cloudevent schema")
	}
	var doc struct {
		Properties struct {
			Type struct {
				Pattern string `json:"pattern"`
			} `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(doc.Properties.Type.Pattern)
	for _, typ := range Types() {
		if !re.MatchString(string(typ)) {
			t.Errorf("registered type %q does not match the envelope schema's pattern %s", typ, re)
		}
	}
}

// The record key's data member, read from parseFast's own parse, decides
// as dataString does: for every testdata event whose type is keyed by a
// data member, that member null, a number, empty, an invalid id, escaped
// (\u, which dataString leaves to encoding/json) or absent.
func TestFastParseKeyMember(t *testing.T) {
	valid, _ := fastSeeds(t)
	tried := 0
	for _, raw := range valid {
		var ev struct {
			Type Type                       `json:"type"`
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		field := registry[ev.Type].KeyField
		if field == "" || field == "-" {
			continue
		}
		for _, v := range []string{`null`, `5`, `""`, `"a//b"`, `"\u0061b"`, `"ok-1"`, ``} {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			data := map[string]json.RawMessage{}
			for k, x := range ev.Data {
				data[k] = x
			}
			if v == "" {
				delete(data, field)
			} else {
				data[field] = json.RawMessage(v)
			}
			b, _ := json.Marshal(data)
			doc["data"] = b
			variant, _ := json.Marshal(doc)
			checkAgrees(t, variant)
			tried++
		}
	}
	if tried == 0 {
		t.Fatal("no testdata event is keyed by a data member")
	}
}

// commonDateTime accepts only times the envelope schema's date-time format
// accepts, and the common ones (Chronicle's own, tau-bench's) all: every
// combination of edge values of each field, and a fuzz target.
func TestCommonDateTimeWithinTheFormat(t *testing.T) {
	set, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for _, date := range []string{"2024-05-15", "2024-02-29", "2023-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "2024-12-31", "0000-01-01", "2024-1-015"} {
		for _, sep := range []string{"T", "t", " "} {
			for _, hms := range []string{"00:00:00", "23:59:59", "23:59:60", "24:00:00", "12:60:00", "12:00:60", "1:00:000", "12:00"} {
				for _, frac := range []string{"", ".1", ".123456789", ".", ".x"} {
					for _, zone := range []string{"Z", "z", "+00:00", "-23:59", "+24:00", "+01:60", "+0100", "", "+01:00:00"} {
						s := date + sep + hms + frac + zone
						common := commonDateTime([]byte(s))
						valid := set.dateTime.Validate(s) == nil
						if common && !valid {
							t.Errorf("commonDateTime(%q) = true, the format rejects it", s)
						}
						if common {
							accepted++
						}
					}
				}
			}
		}
	}
	for _, s := range []string{"2024-05-15T20:01:00Z", "2024-05-15T20:01:00.123456789Z", "2026-11-25T06:00:00+01:00"} {
		if !commonDateTime([]byte(s)) {
			t.Errorf("commonDateTime(%q) = false", s)
		}
	}
	if accepted < 50 {
		t.Fatalf("only %d times accepted: the check is too narrow to test anything", accepted)
	}
}

func FuzzCommonDateTime(f *testing.F) {
	f.Add("2024-05-15T20:01:00.5+01:00")
	f.Add("2024-02-29T23:59:60Z")
	set, err := loadSchemas()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if commonDateTime([]byte(s)) && set.dateTime.Validate(s) != nil {
			t.Fatalf("commonDateTime(%q) = true, the format rejects it", s)
		}
	})
}
