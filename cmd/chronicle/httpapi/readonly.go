package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/chronicle-dev/chronicle/projections"
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
//   - GET /v1/sessions/{id}/events, which reads the log itself: served
//     from LogBrokers (inspect --brokers) when given, listing only the
//     records at or before the positions the projections hold
//     (asOfBound); without them 503, saying how to give them (NoLogHint);
//   - GET /v1/learned/stream, which reads chronicle.learned: served from
//     LogBrokers as well, ending at the state's positions of that topic
//     and never following (boundLearnedEnd); without them 503 saying how
//     to give them, as above;
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
		switch {
		case (readsSessionLog(r.URL.Path) || readsLearned(r.URL.Path)) && len(s.LogBrokers) > 0:
			// served from the log given (inspect --brokers), up to the
			// state's positions (asOfBound)
		case readsSessionLog(r.URL.Path) || readsLearned(r.URL.Path):
			hint := s.NoLogHint
			if hint == "" {
				hint = NoLogHint("", false)
			}
			what := "the session's records"
			if readsLearned(r.URL.Path) {
				what = "chronicle.learned"
			}
			writeErr(w, http.StatusServiceUnavailable, "%s: %s reads %s from the Kafka log, and this inspect was given none: %s", ReadOnlyMessage, r.URL.Path, what, hint)
			return
		case readsLog(r.URL.Path):
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

// readsLearned says whether a GET path is the learned events' stream
// (/v1/learned/stream), which inspect --brokers serves up to the state's
// positions (learnedStream, boundLearnedEnd).
func readsLearned(path string) bool { return path == "/v1/learned/stream" }

// readsSessionLog says whether a GET path is /v1/sessions/{id}/events.
func readsSessionLog(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/sessions/")
	return ok && strings.HasSuffix(rest, "/events")
}

// NoLogHint says how a read-only server over dir (chronicle inspect --data
// dir) reaches the log its projections were built from, for the 503 of GET
// /v1/sessions/{id}/events without one: inspect --brokers naming a
// chronicle broker serving that log. hasLog says dir holds its own log
// (dir/log: a stopped service's directory), which inspect does not open
// itself: the embedded broker writes in its log directory when it starts
// (its LOCK file, the stopped mark it removes, the topics it creates, and
// the state it saves when it stops), and inspect writes nothing. dir
// empty: the generic hint.
func NoLogHint(dir string, hasLog bool) string {
	const restart = "then start inspect again with --brokers 127.0.0.1:9093 (or --brokers naming any Kafka serving that log)"
	switch {
	case dir == "":
		return "serve the log these projections were built from with chronicle broker --data DIR --kafka-listen 127.0.0.1:9093 (DIR: the stopped service's directory, or the --data a replay --into read), " + restart
	case hasLog:
		return fmt.Sprintf("%s holds its own log (%s/log), which inspect does not open, since the embedded broker writes in its log directory when it starts and inspect writes nothing: serve it with chronicle broker --data %s --kafka-listen 127.0.0.1:9093 (once no other process holds it), %s", dir, dir, dir, restart)
	default:
		return fmt.Sprintf("%s holds projections only (as replay --into writes them): serve the log they were built from with chronicle broker --data ORIGINAL --kafka-listen 127.0.0.1:9093 (ORIGINAL: the --data the replay read), %s", dir, restart)
	}
}

// logAddrs are the brokers the routes that read the log read: P.Broker's,
// or, on a ReadOnly server, LogBrokers.
func (s *Server) logAddrs() []string {
	if s.ReadOnly || s.P.Broker == nil {
		return s.LogBrokers
	}
	return s.P.Broker.Addrs()
}

// topicPartition names one partition of a topic.
type topicPartition struct {
	topic string
	part  int32
}

// logBound is the last offset, per partition, of the records an answer may
// list: a read-only state's positions (AsOf's Last, that record included).
// A partition it does not name had no record read: none of it is listed.
// nil lists every record.
type logBound map[topicPartition]int64

// holds says whether bound lets the record at pos be listed.
func (b logBound) holds(pos projections.Position) bool {
	if b == nil {
		return true
	}
	last, ok := b[topicPartition{pos.Topic, pos.Partition}]
	return ok && pos.Offset <= last
}

// asOfBound is the bound of a ReadOnly server's log reads: the positions
// its projections hold (AsOf), so that an as-of state shows no record the
// state was not built from, though the log given (LogBrokers) holds later
// ones; nil on a server that is not ReadOnly.
func (s *Server) asOfBound() logBound {
	if !s.ReadOnly {
		return nil
	}
	b := logBound{}
	for _, p := range AsOf(s.P.Store) {
		b[topicPartition{p.Topic, p.Partition}] = p.Last
	}
	return b
}
