package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// ResponseWriteTimeout bounds each write of a response to its client (30
// s): a write that waits longer for the client to read (its receive
// window full) fails, the handler's further writes fail at once and the
// connection is closed, so a client that stops reading an answer frees its
// handler's goroutine, its connection and the answer held in memory. It
// bounds the waits on the client only, not how long a handler takes before
// it writes (a route's own waits bound that). A handler that sets its own
// write deadlines through http.ResponseController (GET
// /v1/learned/stream, LearnedWriteTimeout) keeps them. Before, the server
// had no write bound: a client that requested GET /v1/sessions?limit=500
// (843 KB) and never read held its handler, descriptor and answer for as
// long as it stayed connected (30 such clients: 30 goroutines and
// descriptors, still held after 75 s, until they closed; a resource-leak
// walkthrough, 2026-12-04).
var ResponseWriteTimeout = 30 * time.Second

// writeDeadlines wraps h so that every write of its responses is bounded
// by ResponseWriteTimeout (deadlineWriter).
func writeDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: ResponseWriteTimeout}
		// a keep-alive connection keeps the deadline of its last
		// response's last write: a handler that takes longer than that
		// before writing must not find it passed
		_ = dw.rc.SetWriteDeadline(time.Time{})
		h.ServeHTTP(dw, r)
		// the server writes what is still buffered after the handler
		// returns (a small answer, or the headers of one without body)
		dw.due()
	})
}

// deadlineWriter sets the connection's write deadline to now +
// d before each write and flush, until the handler sets deadlines of its
// own (SetWriteDeadline, through http.ResponseController).
type deadlineWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	d   time.Duration
	own bool // the handler sets its own deadlines
}

func (w *deadlineWriter) due() {
	if !w.own && w.d > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	}
}

// Write implements http.ResponseWriter.
func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.due()
	return w.ResponseWriter.Write(b)
}

// FlushError is for http.ResponseController.
func (w *deadlineWriter) FlushError() error {
	w.due()
	return w.rc.Flush()
}

// Flush implements http.Flusher.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// SetWriteDeadline is for http.ResponseController: from it on the handler
// owns the write deadline.
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.own = true
	return w.rc.SetWriteDeadline(t)
}

// Hijack implements http.Hijacker.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.rc.Hijack()
}

// Unwrap is for http.ResponseController.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
