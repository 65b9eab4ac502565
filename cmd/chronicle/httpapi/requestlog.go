package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// requestInfo is filled in while a request is served, for its log line.
type requestInfo struct {
	token  string // the authenticated token's name (never the token)
	scopes string // POST /v1/events: its events' scopes (noteEventScopes)
}

type requestInfoKey struct{}

// noteCaller records the authenticated token's name for r's log line.
func noteCaller(r *http.Request, name string) {
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		ri.token = name
	}
}

// maxLoggedScopes is how many distinct scopes of one POST /v1/events
// its log line names; more are counted ("+N more").
const maxLoggedScopes = 5

// noteEventScopes records the distinct scopes of a request's events
// (their effective scopes, once the token's default write scope is
// filled in), in first-seen order, for its log line's scope: a POST
// /v1/events names its scopes in its body, not in ?scope=, so its lines
// had none (an SRE's walkthrough, 2026-11-30).
func noteEventScopes(r *http.Request, envs []events.Envelope) {
	ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if !ok {
		return
	}
	var names []string
	seen := map[string]bool{}
	for i := range envs {
		sc := envs[i].EffectiveScope()
		if !seen[sc] {
			seen[sc] = true
			names = append(names, sc)
		}
	}
	if len(names) > maxLoggedScopes {
		names = append(names[:maxLoggedScopes], fmt.Sprintf("+%d more", len(names)-maxLoggedScopes))
	}
	ri.scopes = strings.Join(names, ",")
}

// logRequests writes one line per request to l once it is answered:
// method, path (without the query), status, bytes written, duration in
// milliseconds, the token's name ("" when unauthenticated, "local" without
// tokens), the ?scope= parameter when given (for POST /v1/events, its
// events' scopes: noteEventScopes), and for a request another
// member forwarded, forwarded_by (its member id) and fan_out (a probe sent
// to every member to find an id's scope). The token itself and the
// query string (which may hold search text) are never logged.
func logRequests(l *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{}
		rw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri)))
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.Int64("bytes", rw.bytes), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("token", ri.token),
		}
		if sc := r.URL.Query().Get("scope"); sc != "" {
			attrs = append(attrs, slog.String("scope", sc))
		} else if ri.scopes != "" {
			attrs = append(attrs, slog.String("scope", ri.scopes))
		}
		// a member's forwarded read, or its fan-out probe (a 404 there is
		// "not on my partitions", not a client's miss)
		if by := r.Header.Get(ForwardedHeader); by != "" {
			attrs = append(attrs, slog.String("forwarded_by", by))
			if r.Header.Get(FanOutHeader) != "" {
				attrs = append(attrs, slog.Bool("fan_out", true))
			}
		}
		l.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
	})
}

// LogRequests is logRequests for a handler served before the API's:
// serve's 503 "starting" answers, which were not logged (an SRE's
// walkthrough: a client's retries while an instance waited for its
// group left no line). A nil l returns next as it is.
func LogRequests(l *slog.Logger, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return logRequests(l, next)
}

// countingWriter records the status and counts the body bytes. It keeps
// streaming working (Flush, Hijack, and Unwrap for http.ResponseController)
// for the MCP endpoint and event streams.
type countingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher.
func (c *countingWriter) Flush() {
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker.
func (c *countingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := c.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("httpapi: the response writer cannot be hijacked")
}

// Unwrap is for http.ResponseController.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
