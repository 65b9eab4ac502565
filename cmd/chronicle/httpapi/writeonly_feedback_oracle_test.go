package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/distill"
)

// A write-only token's feedback answers the same whether or not the scope
// holds the memory. A memory's id is the content address of its scope,
// title and content (distill.MemoryID), so a 200 for an id the scope
// holds and a 404 for one it does not told a write-only token whether
// another writer had recorded a guessed title and content: the oracle the
// tenant-isolation review closed on POST /v1/memories (merged_into,
// evidence), open here, with ?scope= and without.
func TestWriteOnlyFeedbackIsNoExistenceOracle(t *testing.T) {
	p, _, base := writeOnlyServer(t)
	memory := map[string]any{"title": "Refund rule 7", "description": "When a refund is due.", "content": "Refund within 24 hours of booking.", "outcome": "success"}
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", memory)
	if code != 202 {
		t.Fatalf("record: %d %v", code, rec)
	}
	waitCaughtUp(t, p)
	held := rec["id"].(string)
	if want := distill.MemoryID("project:a", "Refund rule 7", "Refund within 24 hours of booking."); held != want {
		t.Fatalf("the recorded id %s is not the content address %s", held, want)
	}
	guessed := distill.MemoryID("project:a", "Refund rule 7", "Refund within 48 hours of booking.")
	for _, q := range []string{"", "?scope=project:a"} {
		answer := func(id string) string {
			code, m := call(t, base, "tok-wo", "POST", "/v1/memories/"+url.PathEscape(id)+"/feedback"+q, map[string]any{"helpful": true})
			return fmt.Sprintf("%d success=%v new_confidence=%v", code, m["success"], m["new_confidence"])
		}
		a, b := answer(held), answer(guessed)
		if a != b {
			t.Errorf("feedback%s as tok-wo: a memory project:a holds answers %s, one it does not %s: whether the guessed content was recorded shows", q, a, b)
		}
		if a != "200 success=true new_confidence=<nil>" {
			t.Errorf("feedback%s as tok-wo: %s, want 200 success without new_confidence", q, a)
		}
	}
}
