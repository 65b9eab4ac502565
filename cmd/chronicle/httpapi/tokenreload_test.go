package httpapi_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// ReloadTokens replaces a running server's tokens: a token added since
// start is accepted and one removed is refused, without a restart (before,
// the file was read at start only: a walkthrough's finding). A file that
// does not validate, or that changes the member secret, is refused and the
// tokens before stay; a server started without tokens takes none.
func TestReloadTokens(t *testing.T) {
	p, _ := setup(t)
	a := access.Token{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}}
	c := access.Token{Name: "c", SHA256: access.Hash("tok-c"), Read: []string{"project:c"}}
	start := access.File{Tokens: []access.Token{a}, MemberSecret: "s3cret-member-secret-of-32-bytes!"}
	api := &httpapi.Server{P: p, Tokens: &start}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	whoami := func(tok string) (int, map[string]any) {
		return call(t, srv.URL, tok, "GET", "/v1/whoami", nil)
	}
	if code, _ := whoami("tok-c"); code != 401 {
		t.Fatalf("a token not in the file yet: %d, want 401", code)
	}
	if err := api.ReloadTokens(access.File{Tokens: []access.Token{a, c}, MemberSecret: start.MemberSecret}); err != nil {
		t.Fatal(err)
	}
	if code, m := whoami("tok-c"); code != 200 || m["name"] != "c" {
		t.Fatalf("the token added by the reload: %d %v, want 200 as c", code, m)
	}
	if err := api.ReloadTokens(access.File{Tokens: []access.Token{c}, MemberSecret: start.MemberSecret}); err != nil {
		t.Fatal(err)
	}
	if code, _ := whoami("tok-a"); code != 401 {
		t.Fatalf("the token the reload removed: %d, want 401", code)
	}
	// refused reloads leave the tokens as they were
	bad := access.File{Tokens: []access.Token{{Name: "", SHA256: access.Hash("x")}}, MemberSecret: start.MemberSecret}
	if err := api.ReloadTokens(bad); err == nil {
		t.Fatal("a file that does not validate was taken")
	}
	if err := api.ReloadTokens(access.File{Tokens: []access.Token{a, c}, MemberSecret: "another-member-secret-of-32-bytes"}); err == nil || !strings.Contains(err.Error(), "member_secret") {
		t.Fatalf("a changed member secret: %v, want a refusal naming member_secret", err)
	}
	if code, _ := whoami("tok-c"); code != 200 {
		t.Fatalf("c after the refused reloads: %d, want 200", code)
	}
	if code, _ := whoami("tok-a"); code != 401 {
		t.Fatalf("a after the refused reloads: %d, want 401 (the member secret's reload named it)", code)
	}
	if err := (&httpapi.Server{P: p}).ReloadTokens(start); !errors.Is(err, httpapi.ErrNoTokens) {
		t.Fatalf("a server without tokens: %v, want ErrNoTokens", err)
	}
}
