package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Member names are case-sensitive in route bodies: encoding/json matches
// them to fields ignoring case, so "title" and "Title" in one object were
// one member to it, the last kept silently (the ambiguity the repeat check
// closes for exact repeats), and a lone "Title" was taken for "title"
// where the README says an unknown field is a 400 naming it (found by a
// review). Each is a 400 naming the member's pointer now, and nothing is
// written.
func TestRouteBodiesRefuseCaseVariantMembers(t *testing.T) {
	_, post, _ := workflowAPI(t)
	for _, c := range []struct{ path, body, pointer string }{
		{"/v1/memories", `{"title":"x","Title":"y","description":"d","content":"c","outcome":"success"}`, "/Title"},
		{"/v1/memories", `{"Title":"y","description":"d","content":"c","outcome":"success"}`, "/Title"},
		{"/v1/memories/m1/feedback", `{"helpful":true,"HELPFUL":false}`, "/HELPFUL"},
	} {
		code, m := post(c.path, c.body)
		if msg := fmt.Sprint(m["error"]); code != http.StatusBadRequest || !strings.Contains(msg, c.pointer) || !strings.Contains(msg, "case-sensitive") {
			t.Errorf("POST %s %s: %d %v; want 400 naming %s, case-sensitive", c.path, c.body, code, m, c.pointer)
		}
	}
	// the exact names still work
	if code, m := post("/v1/memories", `{"title":"y","description":"d","content":"c","outcome":"success"}`); code != http.StatusAccepted {
		t.Errorf("POST /v1/memories with exact names: %d %v, want 202", code, m)
	}
}
