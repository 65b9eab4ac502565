package events

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// EntityKey is the identity of an entity — a session, memory, search,
// reasoning task, workflow or pattern — wherever Chronicle stores or routes
// it: its scope and its id joined by '/', e.g. "project:a/sa-2". The same id
// in two scopes is two entities. Scopes (project:<id>, team:<id>, org:<id>)
// never contain '/', so the first '/' separates the two parts even when an
// id contains '/'. An empty scope stands for DefaultScope.
//
// Projection rows of an entity are keyed by EntityKey, and so is the Kafka
// record key of its events, so all of an entity's events share a partition.
func EntityKey(scope, id string) string {
	if scope == "" {
		scope = DefaultScope
	}
	return scope + "/" + id
}

// SplitEntityKey is the inverse of EntityKey. ok is false when k has no '/'
// or an empty part.
func SplitEntityKey(k string) (scope, id string, ok bool) {
	scope, id, ok = strings.Cut(k, "/")
	if !ok || scope == "" || id == "" {
		return "", "", false
	}
	return scope, id, true
}

// MaxIDLength is the longest entity id accepted, in bytes.
const MaxIDLength = 256

// CheckID reports whether id is a valid entity id (session, memory,
// search, reasoning task, workflow): 1 to MaxIDLength bytes of ASCII
// letters, digits and . _ ~ : @ + = - /, starting with a letter or digit,
// with no empty segment ("//") and no trailing '/'. The error says which
// rule failed. In URLs an id is one path segment: clients percent-encode
// its '/' as %2F (taubench-airline%2F5%2F2).
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("empty")
	case len(id) > MaxIDLength:
		return fmt.Errorf("%d bytes, longer than %d", len(id), MaxIDLength)
	case !isAlnum(id[0]):
		// the character: "タスク" was told to start with a letter, which
		// タ is (a passes walkthrough, 2026-12-06)
		r, _ := utf8.DecodeRuneInString(id)
		return fmt.Errorf("must start with an ASCII letter or digit, not %q", r)
	case strings.HasSuffix(id, "/") || strings.Contains(id, "//"):
		return errors.New(`no empty segment ("//") and no trailing '/'`)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !idByte[c] {
			// the character, not its first byte: 'é' was shown as 'Ã'
			r, _ := utf8.DecodeRuneInString(id[i:])
			return fmt.Errorf("character %q at byte %d is not allowed (ASCII letters, digits and %s only)", r, i, idPunct)
		}
	}
	return nil
}

// idPunct are the punctuation characters an id may contain.
const idPunct = "._~:@+=-/"

// idByte tells the bytes an id may contain: letters, digits and idPunct.
var idByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isAlnum(byte(c)) || strings.IndexByte(idPunct, byte(c)) >= 0
	}
	return t
}()

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidScope reports whether s is a concrete scope as the envelope schema's
// scope attribute allows it: project:<name>, team:<name> or org:<name>,
// name made of ASCII letters, digits, '.', '_' and '-'.
func ValidScope(s string) bool {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || kind != "project" && kind != "team" && kind != "org" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ScopeReason is the refusal of s, a string that is no scope
// (ValidScope): `"<s>" is not project:<id>, team:<id> or org:<id>`, and,
// for a known kind, why: the name is empty, or the first character of it
// that is not allowed
// ("character '東' at byte 8 is not allowed in a scope's name (ASCII
// letters, digits, '.', '_' and '-' only)").
func ScopeReason(s string) string {
	reason := fmt.Sprintf("%q is not project:<id>, team:<id> or org:<id>", s)
	if why := scopeWhy(s); why != "" {
		reason += ": " + why
	}
	return reason
}

// ScopeFilterReason says why s is neither a scope kind (project, team,
// org, all) nor a valid scope, for a ?scope= filter's refusal: the forms
// it takes and, for a scope of a known kind, what is wrong with it (the
// character and its byte, or the empty name), as ScopeReason says it
// (the filters said the forms alone: a walkthrough, 2026-12-06).
func ScopeFilterReason(s string) string {
	reason := fmt.Sprintf("%q is not a kind (project, team, org, all) or a scope (project:<id>, team:<id>, org:<id>)", s)
	if why := scopeWhy(s); why != "" {
		reason += ": " + why
	}
	return reason
}

// scopeWhy is what is wrong with s, a scope of a known kind, or "".
func scopeWhy(s string) string {
	why := ""
	kind, name, ok := strings.Cut(s, ":")
	switch {
	case !ok || kind != "project" && kind != "team" && kind != "org":
		// the refusal lists the kinds already
	case name == "":
		why = fmt.Sprintf("the name after %q is empty", kind+":")
	default:
		for i, r := range name {
			if r >= utf8.RuneSelf || !isAlnum(byte(r)) && r != '.' && r != '_' && r != '-' {
				why = fmt.Sprintf("character %q at byte %d is not allowed in a scope's name (ASCII letters, digits, '.', '_' and '-' only)", r, len(kind)+1+i)
				break
			}
		}
	}
	return why
}
