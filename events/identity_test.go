package events_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

func TestEntityKey(t *testing.T) {
	for _, c := range []struct{ scope, id, key string }{
		{"project:a", "sa-2", "project:a/sa-2"},
		{"", "sa-2", "org:default/sa-2"},
		{"team:x", "taubench-airline/5/2", "team:x/taubench-airline/5/2"},
	} {
		k := events.EntityKey(c.scope, c.id)
		if k != c.key {
			t.Errorf("EntityKey(%q, %q) = %q, want %q", c.scope, c.id, k, c.key)
		}
		s, id, ok := events.SplitEntityKey(k)
		wantScope := c.scope
		if wantScope == "" {
			wantScope = events.DefaultScope
		}
		if !ok || s != wantScope || id != c.id {
			t.Errorf("SplitEntityKey(%q) = %q, %q, %v", k, s, id, ok)
		}
	}
	for _, bad := range []string{"", "noslash", "/id", "project:a/"} {
		if _, _, ok := events.SplitEntityKey(bad); ok {
			t.Errorf("SplitEntityKey(%q) ok, want not ok", bad)
		}
	}
}

// An id may hold letters, digits and the punctuation "._~:@+=-/" (not
// first, not "//", not last '/'): every byte value, in the middle of an id.
func TestCheckIDBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._~:@+=-/", b) >= 0
		if err := events.CheckID("a" + string([]byte{b}) + "z"); (err == nil) != want {
			t.Errorf("CheckID with byte %q: %v, want accepted %v", b, err, want)
		}
	}
}

// DerivedID is the hex of the first 16 bytes of the SHA-256 of
// "source\x00id\x00type\x00n", as it was first written with fmt: ids in
// stored rows and in the log depend on it.
func TestDerivedIDAsFormatted(t *testing.T) {
	for _, c := range []struct {
		src, id string
		typ     events.Type
		n       int
	}{
		{"chronicle/sessions", "evt-1", events.EvaluationCompleted, 0},
		{"", "", "", 12},
		{"src é", "id\x00x", events.MemoryRecorded, -3},
		{"a", "b", events.PatternCounted, 1234567},
	} {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", c.src, c.id, c.typ, c.n))
		if got, want := events.DerivedID(c.src, c.id, c.typ, c.n), fmt.Sprintf("%x", h[:16]); got != want {
			t.Errorf("DerivedID(%q, %q, %q, %d) = %s, want %s", c.src, c.id, c.typ, c.n, got, want)
		}
	}
}

// A character outside the id alphabet is named as the character, not as
// the first byte of its UTF-8 encoding ('é' read 'Ã': found by a new
// user's walkthrough).
func TestCheckIDNamesTheCharacter(t *testing.T) {
	err := events.CheckID("café")
	if err == nil || !strings.Contains(err.Error(), `'é' at byte 3`) {
		t.Fatalf("CheckID(café): %v; want it to name 'é' at byte 3", err)
	}
}
