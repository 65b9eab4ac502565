package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// A write-only token's 404 says it sees no entity and no dead letter, and
// who does; the hint sent it to GET /v1/deadletters, which answers it an
// empty list (a producer's walkthrough, 2026-12-06). A token that reads
// the scope keeps the hint to the dead letters.
func TestWriteOnlyTokenNotFoundSaysWhoSees(t *testing.T) {
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "producer", SHA256: access.Hash("tok-w"), Write: []string{"project:a"}},
		{Name: "reader", SHA256: access.Hash("tok-r"), Read: []string{"project:a"}},
	}}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, Tokens: &tokens}).Handler()))
	defer srv.Close()
	code, m := call(t, srv.URL, "tok-w", "GET", "/v1/sessions/nope", nil)
	if msg := fmt.Sprint(m["error"]); code != 404 || !strings.Contains(msg, "this token reads no scope, so it sees no session and no dead letter: a token that reads the event's scope sees both") {
		t.Errorf("write-only token: %d %q, want 404 saying it reads no scope", code, msg)
	}
	code, m = call(t, srv.URL, "tok-r", "GET", "/v1/sessions/nope", nil)
	if msg := fmt.Sprint(m["error"]); code != 404 || strings.Contains(msg, "reads no scope") || !strings.Contains(msg, "GET /v1/deadletters") {
		t.Errorf("reading token: %d %q, want 404 pointing at the dead letters", code, msg)
	}
}
