package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestBinaryModeQuotedValuesAndContentType: the CloudEvents HTTP binding
// says a receiver MUST undo RFC 7230 quoted strings in a ce- header value
// before percent-decoding (senders of older versions quoted values with
// spaces), and that datacontenttype MUST be populated from the
// Content-Type header. Before, ce-subject: "hello world" kept its quotes,
// ce-specversion: "1.0" was refused, and Content-Type: application/json;
// charset=utf-8 became a bare application/json (found by a
// standards-conformance walkthrough).
func TestBinaryModeQuotedValuesAndContentType(t *testing.T) {
	h := http.Header{}
	h.Set("ce-specversion", `"1.0"`)
	h.Set("ce-id", "q1")
	h.Set("ce-source", "/t")
	h.Set("ce-type", "memory.feedback.v1")
	h.Set("ce-subject", `"hello world \"x\" %25"`)
	h.Set("ce-myext", `a" b "c`)
	h.Set("Content-Type", "application/json; charset=utf-8")
	raw, err := binaryEvent(h, []byte(`{"memory_id":"m1","signal":"explicit_feedback","positive":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"specversion": "1.0", "subject": `hello world "x" %`, "myext": "a b c", "datacontenttype": "application/json; charset=utf-8"} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	// without the header the event has no datacontenttype: the binding
	// maps the one to the other (it was given application/json, which the
	// producer never said: a conformance check)
	h.Del("Content-Type")
	var bare map[string]any
	if raw, err = binaryEvent(h, []byte(`{}`)); err != nil || json.Unmarshal(raw, &bare) != nil {
		t.Fatalf("without Content-Type: %v %s", err, raw)
	}
	if _, ok := bare["datacontenttype"]; ok {
		t.Errorf("without Content-Type: datacontenttype %q, want none", bare["datacontenttype"])
	}
	h.Set("ce-subject", `"open`)
	if _, err := binaryEvent(h, []byte(`{}`)); err == nil {
		t.Error("an unclosed quoted string was accepted")
	} else if ie, ok := err.(*inputError); !ok || ie.Pointer != "/subject" {
		t.Errorf("unclosed quote: %v, want an inputError at /subject", err)
	}
}
