package httpapi

import (
	"context"
	"net/http"
	"strings"
)

// readOnlyKey marks the context of a request a ReadOnly server serves,
// so that what a route says can leave out the routes inspect does not
// serve (servedReadOnly).
type readOnlyKey struct{}

// servedReadOnly reports whether r is served by a ReadOnly server
// (chronicle inspect).
func servedReadOnly(r *http.Request) bool {
	ro, _ := r.Context().Value(readOnlyKey{}).(bool)
	return ro
}

// ReadOnlyMessage starts the error of every route a read-only server
// (chronicle inspect) does not serve.
const ReadOnlyMessage = "read-only: chronicle inspect serves the read API over a stopped or replayed data directory and writes nothing"

// readOnlyGuard is rt's handler, or, on a ReadOnly server:
//   - for a route that writes (every pattern not starting with "GET ",
//     /mcp included): 405 with Allow naming what the path serves here
//     ("GET, HEAD", or empty: /mcp) and an error naming read-only mode;
//   - GET /healthz: {"status": "read-only", "as_of": [...]}, as_of naming
//     the last record of each partition the projections hold (AsOf);
//   - GET /v1/cluster: 503 (no consumer group runs);
//   - the GET routes that read the log itself rather than the projections
//     (a session's events, the learned events' stream): 503 naming the
//     reason, since inspect starts no broker;
//   - every other GET route: served as is, from the projections. The
//     workflow reads (a workflow's state, its checkpoints, its state as of
//     a checkpoint id) are among them: the processor records each
//     checkpoint's id (a cpid/ row), so they read nothing from the log;
//     only a checkpoint applied before those rows existed (an older data
//     directory) is named from the log, and that read answers 503 naming
//     why (workflows.ErrNoLog, writeLogErr).
func (s *Server) readOnlyGuard(rt Route, jr *jsonRouter) http.Handler {
	if !s.ReadOnly {
		return rt.Handler
	}
	if !strings.HasPrefix(rt.Pattern, "GET ") {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Allow: what this server serves on the path (GET, HEAD when a
			// read route does; none for /mcp, whose every method is MCP)
			w.Header().Set("Allow", jr.readAllow(r))
			if !strings.Contains(rt.Pattern, " ") {
				writeErr(w, http.StatusMethodNotAllowed, "%s: %s is not served (its tools record memories and feedback; send it to a running chronicle serve)", ReadOnlyMessage, r.URL.Path)
				return
			}
			writeErr(w, http.StatusMethodNotAllowed, "%s: %s %s is a write (send it to a running chronicle serve)", ReadOnlyMessage, r.Method, r.URL.Path)
		})
	}
	switch rt.Pattern {
	case "GET /healthz":
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// as_of: the log positions the projections were built to
			// (AsOf), so that an answer can be tied to its records
			writeJSON(w, http.StatusOK, map[string]any{"status": "read-only", "lag": 0, "as_of": AsOf(s.P.Store)})
		})
	case "GET /v1/cluster":
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeErr(w, http.StatusServiceUnavailable, "%s: no consumer group runs, so there is no cluster view", ReadOnlyMessage)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if readsLog(r.URL.Path) {
			writeErr(w, http.StatusServiceUnavailable, "%s: %s reads the Kafka log, and inspect starts no broker (it serves the projections only)", ReadOnlyMessage, r.URL.Path)
			return
		}
		rt.Handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), readOnlyKey{}, true)))
	})
}

// readsLog says whether a GET path is answered from the log rather than
// the projections: /v1/sessions/{id}/events, a pattern's history
// (/v1/patterns/{id}/history, read from chronicle.patterns) and the
// learned events' stream (/v1/learned/..., read from its topic). The workflow routes are
// not: their checkpoint ids are the processor's cpid/ rows (before, every
// /v1/workflows/... path answered 503 here, though GET /v1/workflows
// listed the same workflows with their checkpoint ids).
func readsLog(path string) bool {
	if rest, ok := strings.CutPrefix(path, "/v1/sessions/"); ok {
		return strings.HasSuffix(rest, "/events")
	}
	if rest, ok := strings.CutPrefix(path, "/v1/patterns/"); ok {
		return strings.HasSuffix(rest, "/history")
	}
	return strings.HasPrefix(path, "/v1/learned/")
}
