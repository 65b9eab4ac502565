package events

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataString agrees with its encoding/json definition on the testdata
// events' data (every member name of each, and one that is absent) and on
// the edge cases of JSON objects.
func TestDataStringAgrees(t *testing.T) {
	cases := [][]byte{
		[]byte(`{"id":"a"}`), []byte(`{"id":"a","id":"b"}`), []byte(`{"\u0069d":"esc"}`), []byte(`{"id":"\u00e9\n"}`),
		[]byte(`{"id":null}`), []byte(`{"id":1}`), []byte(`{"id":{"x":1}}`), []byte(`{"id":["a"]}`), []byte(`{"id":true}`),
		[]byte(`{"ID":"case"}`), []byte(`{}`), []byte(`null`), []byte(`[]`), []byte(`"id"`), []byte(`1`), []byte(``),
		[]byte(`{"id":"a"`), []byte(`{"id":"a"} x`), []byte("{\"id\":\"\xff\"}"), []byte(" {\"id\" : \"sp\" } "),
		[]byte(`{"id":"a\ud800b"}`), []byte(`{"id":"\"quoted\""}`), []byte(`{"id":"a","id":null}`), []byte(`{"id":1,"id":"s"}`),
	}
	files, err := filepath.Glob(filepath.Join("testdata", "types", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct{ Data json.RawMessage }
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, ev.Data)
	}
	if len(files) < 10 {
		t.Fatalf("only %d testdata events", len(files))
	}
	names := []string{"id", "ID", "absent", "session_id", "memory_id", "search_id", "workflow_id", "tool", "scope"}
	for _, data := range cases {
		for _, name := range names {
			k, obj, present, str := dataString(data, name)
			wk, wobj, wpresent, wstr := dataStringSlow(data, name)
			if k != wk || obj != wobj || present != wpresent || str != wstr {
				t.Errorf("dataString(%q, %q) = %q %v %v %v, encoding/json says %q %v %v %v", data, name, k, obj, present, str, wk, wobj, wpresent, wstr)
			}
		}
	}
}

// FuzzDataStringAgrees runs dataString against its encoding/json
// definition on arbitrary bytes (make fuzz).
func FuzzDataStringAgrees(f *testing.F) {
	for _, s := range []string{`{"id":"a"}`, `{"id":"a","id":null}`, `{"\u0069d":"x"}`, `{"id":"a\ud800"}`, `null`, `{"id":1}`} {
		f.Add([]byte(s), "id")
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		k, obj, present, str := dataString(data, name)
		wk, wobj, wpresent, wstr := dataStringSlow(data, name)
		if k != wk || obj != wobj || present != wpresent || str != wstr {
			t.Fatalf("dataString(%q, %q) = %q %v %v %v, encoding/json says %q %v %v %v", data, name, k, obj, present, str, wk, wobj, wpresent, wstr)
		}
	})
}

// A data object nested deeper than fastjson's 300 levels has its members
// read as encoding/json reads them. Before, its key member was not found
// and the event was refused as "/data: not a JSON object" (a workflow
// update nested 299 levels, a workflows walkthrough).
func TestDataMemberOfADeepDocument(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 400) + "1" + strings.Repeat("}", 400)
	data := []byte(`{"workflow_id":"w1","update":` + deep + `}`)
	k, isStr, present, obj := dataMember(data, "workflow_id")
	if k != "w1" || !isStr || !present || !obj {
		t.Fatalf("dataMember: %q %v %v %v, want w1 found", k, isStr, present, obj)
	}
	if k, obj, present, str := dataString(data, "workflow_id"); k != "w1" || !obj || !present || !str {
		t.Fatalf("dataString: %q %v %v %v", k, obj, present, str)
	}
}

// UnescapeHTML turns encoding/json's HTML escapes back into the
// characters and keeps every other escape, an escaped backslash before
// "u003c" included.
func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"\u003cb\u003e fares \u0026 fees \u003c/b\u003e"}`: `{"a":"<b> fares & fees </b>"}`,
		`{"a":"\\u003c is text"}`:                                `{"a":"\\u003c is text"}`,
		`{"a":"\u00e9 \n \"q\" \u2028"}`:                         `{"a":"\u00e9 \n \"q\" \u2028"}`,
		`{"a":"\\\u003c"}`:                                       `{"a":"\\<"}`,
		`{"n":1}`:                                                `{"n":1}`,
	} {
		if got := string(UnescapeHTML([]byte(in))); got != want {
			t.Errorf("UnescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
