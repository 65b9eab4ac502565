package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// An error body keeps '<', '>' and '&' as written: json.Encoder's default
// \u003c escapes made "<partition>:<next offset>" unreadable in a terminal
// (a walkthrough, 2026-11-30). nosniff stands in for the escapes' purpose.
func TestWriteJSONKeepsMarkupReadable(t *testing.T) {
	w := httptest.NewRecorder()
	writeErr(w, 400, "after: %q is not <partition>:<next offset> & more", "garbage")
	body := w.Body.String()
	if !strings.Contains(body, `is not <partition>:<next offset> & more`) {
		t.Errorf("body %s: want the markup as written", body)
	}
	if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
}
