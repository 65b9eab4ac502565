package httpapi

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// requestInfo is filled in while a request is served, for its log line.
type requestInfo struct {
	token string // the authenticated token's name (never the token)
}

type requestInfoKey struct{}

// noteCaller records the authenticated token's name for r's log line.
func noteCaller(r *http.Request, name string) {
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		ri.token = name
	}
}

// logRequests writes one line per request to l once it is answered:
// method, path (without the query), status, bytes written, duration in
// milliseconds, the token's name ("" when unauthenticated, "local" without
// tokens), the ?scope= parameter when given, and for a request another
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
