package events_test

import (
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// A scope refused for its name says which character is not allowed and
// which are: a Japanese team's "project:東京" was refused with only "is
// not project:<id>, team:<id> or org:<id>", which it seemed to be.
func TestScopeReasonNamesTheCharacter(t *testing.T) {
	for _, c := range []struct{ scope, want string }{
		{"project:東京", `character '東' at byte 8 is not allowed in a scope's name (ASCII letters, digits, '.', '_' and '-' only)`},
		{"team:café", `character 'é' at byte 8 is not allowed`},
		{"org:a b", `character ' ' at byte 5 is not allowed`},
		{"projekt:x", `"projekt:x" is not project:<id>, team:<id> or org:<id>`},
		{"project:", `the name after "project:" is empty`},
		{"bogus", `"bogus" is not project:<id>, team:<id> or org:<id>`},
	} {
		got := events.ScopeReason(c.scope)
		if !strings.HasPrefix(got, `"`+c.scope+`" is not project:<id>, team:<id> or org:<id>`) || !strings.Contains(got, c.want) {
			t.Errorf("ScopeReason(%q) = %s, want it to say %s", c.scope, got, c.want)
		}
	}
}

// A ?scope= filter's refusal names the forms it takes and, for a scope of
// a known kind, what is wrong with it, as ScopeReason does.
func TestScopeFilterReasonNamesTheCharacter(t *testing.T) {
	for _, c := range []struct{ scope, want string }{
		{"project:東京", `character '東' at byte 8 is not allowed`},
		{"team:", `the name after "team:" is empty`},
		{"nope:", `"nope:" is not a kind (project, team, org, all) or a scope (project:<id>, team:<id>, org:<id>)`},
	} {
		if got := events.ScopeFilterReason(c.scope); !strings.HasPrefix(got, `"`+c.scope+`" is not a kind`) || !strings.Contains(got, c.want) {
			t.Errorf("ScopeFilterReason(%q) = %s, want it to say %s", c.scope, got, c.want)
		}
	}
}
