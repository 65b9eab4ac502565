package httpapi

import (
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// scopeFilter parses a ?scope= list filter: "" or "all" (every scope the
// caller reads), a kind ("project", "team", "org": every scope of that
// kind) or one scope ("project:a"). The searches (memories, patterns,
// tools) read the same forms through search.Query.Scope.
func scopeFilter(v string) (func(scope string) bool, error) {
	switch v {
	case "", search.ScopeAll:
		return func(string) bool { return true }, nil
	case search.ScopeProject, search.ScopeTeam, search.ScopeOrg:
		return func(sc string) bool { return strings.HasPrefix(sc, v+":") }, nil
	}
	if !events.ValidScope(v) {
		return nil, paramErr("scope", "%s", events.ScopeFilterReason(v))
	}
	return func(sc string) bool { return sc == v }, nil
}
