package access_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

func TestTokenFile(t *testing.T) {
	tok, err := access.NewToken()
	if err != nil || !strings.HasPrefix(tok, "chr_") || len(tok) < 40 {
		t.Fatalf("token %q %v", tok, err)
	}
	f := access.File{Tokens: []access.Token{{Name: "a", SHA256: access.Hash(tok), Read: []string{"project:a", "team:t"}, Write: []string{"project:a"}}}}
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := access.Save(path, f); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), tok) {
		t.Fatal("the plain token is stored")
	}
	g, err := access.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Authenticate("Bearer " + tok)
	if err != nil || c.Name != "a" || !c.CanRead("team:t") || c.CanRead("project:b") || !c.CanWrite("project:a") || c.CanWrite("team:t") || c.ReadsAll() || c.DefaultWriteScope() != "project:a" {
		t.Fatalf("caller %+v %v", c, err)
	}
	for _, h := range []string{"", "Bearer ", "Bearer nope", tok, "Basic " + tok} {
		if _, err := g.Authenticate(h); !errors.Is(err, access.ErrUnauthenticated) {
			t.Errorf("header %q: %v", h, err)
		}
	}
	if !access.Unrestricted.ReadsAll() || !access.Unrestricted.CanWrite("org:x") {
		t.Fatal("unrestricted caller")
	}
}

func TestValidateNamesTheEntry(t *testing.T) {
	h := access.Hash("x")
	for _, c := range []struct {
		f    access.File
		want string
	}{
		{access.File{Tokens: []access.Token{{SHA256: h}}}, "tokens[0].name"},
		{access.File{Tokens: []access.Token{{Name: "n", SHA256: "abc"}}}, "tokens[0] (n).sha256"},
		{access.File{Tokens: []access.Token{{Name: "n", SHA256: h, Read: []string{"galaxy:1"}}}}, `scope "galaxy:1"`},
		{access.File{Tokens: []access.Token{{Name: "n", SHA256: h}, {Name: "m", SHA256: h}}}, "tokens[1] (m).sha256: duplicate"},
		// authors are token names: two tokens of one name are refused
		{access.File{Tokens: []access.Token{{Name: "n", SHA256: h}, {Name: "n", SHA256: access.Hash("y")}}}, `tokens[1].name: "n" is the name of tokens[0] too`},
	} {
		if err := c.f.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
	// a misspelt field is an error, not a token without its write scopes
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens":[{"name":"x","sha256":"`+h+`","read":["project:a"],"wrte":["project:a"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := access.Load(path); err == nil || !strings.Contains(err.Error(), `"wrte"`) {
		t.Errorf("a token file with an unknown field: %v; want an error naming it", err)
	}
}

// A token file is the keys to every scope and, with member_secret, to
// signing as a cluster member: Save leaves it 0600 even over a file made
// 0644 by hand (os.WriteFile kept the mode), Exposed reports a file others
// may read, and an upper-case hash, accepted before and matching no token,
// now authenticates its token (a security walkthrough, 2026-12-05).
func TestTokenFileModeAndHashCase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if mode, ok := access.Exposed(path); !ok || mode != 0o644 {
		t.Fatalf("Exposed of a 0644 file = %04o, %v; want 0644, true", mode, ok)
	}
	tok := "chr_case"
	f := access.File{Tokens: []access.Token{{Name: "a", SHA256: strings.ToUpper(access.Hash(tok)), Read: []string{"*"}}}}
	if err := access.Save(path, f); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after Save over a 0644 file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if mode, ok := access.Exposed(path); ok {
		t.Fatalf("Exposed of a 0600 file = %04o, true", mode)
	}
	loaded, err := access.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := loaded.Authenticate("Bearer " + tok); err != nil || c.Name != "a" {
		t.Fatalf("a token whose hash is written in upper case: %v, %+v; want it authenticated", err, c)
	}
}
