package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// scopesOfID lists the scopes whose projection holds an entity with a bare
// id (sessions.Scopes, memories.Scopes).
type scopesOfID func(store *projections.Store, id string) ([]string, error)

// entityKey resolves the entity a request names to its events.EntityKey.
// An id is one path segment ('/' percent-encoded as %2F); the scope comes
// from ?scope= or, without it, is the one scope the caller may access
// (allowed: CanRead for reads, CanWrite for writes) that holds the id. It
// writes the error and returns ok false: 400 for a bad id or scope, 404
// when no accessible scope holds the id (the same answer as a missing
// entity, so another scope's ids are not revealed), 409 when several do,
// and, on a write route, 403 naming the scope when it is one the caller
// reads but may not write (the caller may see the entity there, so a 404
// would only mislead; before, a read-only token's resume of a search it
// had just read was "not found").
// When no scope the caller may access holds the id in the projection,
// fallback (may be nil) names the scope to use, e.g. the caller's only
// scope for a session log that was never projected.
func entityKey(w http.ResponseWriter, r *http.Request, kind, id string, scopes scopesOfID, store *projections.Store, allowed func(string) bool, fallback func() string) (string, bool) {
	if err := events.CheckID(id); err != nil {
		writeErr(w, http.StatusBadRequest, "%s id: %v", kind, err)
		return "", false
	}
	if sc := r.URL.Query().Get("scope"); sc != "" {
		if !events.ValidScope(sc) {
			writeParamErr(w, http.StatusBadRequest, "scope", events.ScopeReason(sc))
			return "", false
		}
		if !allowed(sc) {
			if CallerOf(r).CanRead(sc) { // a write route: the caller may see the scope, so say why
				writeErr(w, http.StatusForbidden, "scope: this token may read but not write %s", sc)
				return "", false
			}
			entityNotFound(w, r, kind, id)
			return "", false
		}
		return events.EntityKey(sc, id), true
	}
	all, err := scopes(store, id)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return "", false
	}
	var held, readOnly []string
	for _, sc := range all {
		if allowed(sc) {
			held = append(held, sc)
		} else if CallerOf(r).CanRead(sc) {
			readOnly = append(readOnly, sc)
		}
	}
	switch {
	case len(held) == 1:
		return events.EntityKey(held[0], id), true
	case len(held) > 1:
		writeErr(w, http.StatusConflict, "%s %q exists in several scopes you may access (%s): add ?scope=", kind, id, strings.Join(held, ", "))
		return "", false
	case fallback != nil:
		// no scope the caller may access holds it (another scope's holding
		// it must not change the answer: it did, telling the caller that
		// another tenant has the id and hiding its own unprojected one)
		if sc := fallback(); sc != "" && allowed(sc) {
			return events.EntityKey(sc, id), true
		}
	}
	if len(readOnly) > 0 {
		// a write route, and the id is in scopes the caller reads but may
		// not write: a 403 naming them, not a 404 for an entity the same
		// token just read
		writeErr(w, http.StatusForbidden, "%s %q is in %s, which this token may read but not write", kind, id, strings.Join(readOnly, ", "))
		return "", false
	}
	entityNotFound(w, r, kind, id)
	return "", false
}

// entityNotFound writes the 404 of an entity route: "<kind> "<id>" not
// found" and where to look next for an entity whose events were accepted
// with 202 but never made it (refused by a processor after the 202, or not
// applied yet). The text is the same whether no scope holds the id or one
// the caller may not access holds it, so it reveals nothing. Before, it
// said "not found" only (a Python integrator's walkthrough: its session's
// records, sent to another partition, were dead letters, and nothing
// pointed there).
func entityNotFound(w http.ResponseWriter, r *http.Request, kind, id string) {
	hint := "; an event refused after its 202 is listed in GET /v1/deadletters"
	switch {
	case kind == "session" && servedReadOnly(r):
		// inspect reads no log: the events route is a 503 there (the
		// hint pointed to it: a walkthrough, 2026-12-06)
		hint = " in the sessions projection of a scope you read (this directory's: inspect reads no log, so events the log holds beyond it are not seen here); GET /v1/deadletters lists those refused after their 202"
	case kind == "session":
		hint = " in the sessions projection of a scope you read; GET /v1/sessions/{id}/events reads its events from the log (those not applied yet included), and GET /v1/deadletters lists those refused after their 202"
	case kind == "panel":
		hint = "; a panel is the search.branch.completed.v1 events of a consensus panel's search_id, in a scope you read; GET /v1/deadletters lists those refused after their 202"
	case kind == "memory":
		// a recording merged into an existing memory is no memory of its
		// own: its id answered 404 pointing at the dead letters alone,
		// where there was nothing (a subscriber walkthrough, 2026-12-03)
		hint += "; a recording merged into an existing memory is that memory's evidence, under the id its memory.created.v1 names in merged_into (POST /v1/memories answers it as merged_into)"
	}
	if c, ok := r.Context().Value(callerKey{}).(access.Caller); ok && len(c.Read) == 0 {
		// a write-only token: every entity and every dead letter is
		// hidden from it, and the hint led nowhere (a producer's
		// walkthrough, 2026-12-06: its conflicting resend was dead-lettered
		// after its 202, and GET /v1/deadletters answered it an empty list)
		hint = "; this token reads no scope, so it sees no " + kind + " and no dead letter: a token that reads the event's scope sees both (GET /v1/deadletters lists an event refused after its 202)"
	}
	writeErr(w, http.StatusNotFound, "%s %q not found%s", kind, id, hint)
}

// pathID returns the entity id of an escaped path remainder (after the
// route's prefix) and the rest after it: the id is the first segment,
// percent-decoded, so %2F stands for a '/' inside the id. For
// compatibility, an unencoded id with '/' is accepted too, with or
// without a sub-route after it: a last segment that is one of suffixes
// (the route's sub-routes, "events", "history") is the sub-route, so an
// id whose last segment is such a name is reached encoded only
// ("x%2Fevents").
func pathID(escaped string, suffixes ...string) (id, suffix string, err error) {
	for _, s := range suffixes {
		if rest, ok := strings.CutSuffix(escaped, "/"+s); ok && rest != "" {
			escaped, suffix = rest, s
			break
		}
	}
	id, err = url.PathUnescape(escaped)
	if err != nil {
		return "", "", fmt.Errorf("id: %v", err)
	}
	return id, suffix, nil
}

// readsAndWrites is the scope filter of a write route that acts on state
// the caller must read to use it (a workflow's resume and decision
// answers, a search's resume, a session's improve): a scope the caller
// both reads and writes. A caller that writes a scope but may not read it
// (a write-only producer) gets the read's 404 from entityKey for an id
// there, held or not, where these routes answered the state, the PAIR
// view or the search's status, and their 404s and 409s told which ids
// existed (found by a tenant-isolation review). A caller that reads the
// scope but may not write it keeps entityKey's 403.
func readsAndWrites(r *http.Request) func(string) bool {
	c := CallerOf(r)
	return func(sc string) bool { return c.CanRead(sc) && c.CanWrite(sc) }
}
