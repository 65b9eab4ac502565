package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
)

// FuzzSplitBody: a body splits into JSON values that re-join to the same
// JSON (none for an empty array), or is rejected with an error; it never
// panics. Seeds: one real
// tau-bench session as an array, one event, and edge cases.
func FuzzSplitBody(f *testing.F) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		f.Fatal(err)
	}
	envs, err := taubench.Events(recs[0])
	if err != nil {
		f.Fatal(err)
	}
	arr, _ := json.Marshal(envs)
	one, _ := json.Marshal(envs[0])
	for _, s := range [][]byte{arr, one, []byte("[]"), []byte("{}"), []byte(" [ {} , {} ] "), []byte("null"), []byte("[1]")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		parts, err := splitBody(body)
		if err != nil {
			return
		}
		if len(parts) == 0 {
			// only an empty batch, which is valid (JSON Batch Format §4.3)
			var whole []json.RawMessage
			if json.Unmarshal(body, &whole) != nil || whole == nil || len(whole) != 0 {
				t.Fatalf("no error and no part for %q, which is not an empty array", body)
			}
			return
		}
		for _, p := range parts {
			if !json.Valid(p) {
				t.Fatalf("part %q is not JSON", p)
			}
		}
		if len(parts) == 1 && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			return
		}
		var whole, joined []any
		if json.Unmarshal(body, &whole) != nil {
			t.Fatalf("split a body that is not an array: %q", body)
		}
		for _, p := range parts {
			var v any
			_ = json.Unmarshal(p, &v)
			joined = append(joined, v)
		}
		a, _ := json.Marshal(whole)
		b, _ := json.Marshal(joined)
		if !bytes.Equal(a, b) {
			t.Fatalf("parts do not re-join to the body")
		}
	})
}
