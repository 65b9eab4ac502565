package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
)

// sniffBytes bounds how much of a POST body methodNotFound reads to find
// the request's id and method (1 MiB); a larger body is passed on as it
// is and its answer left alone.
const sniffBytes = 1 << 20

// methodNotFound answers a JSON-RPC request for a method the server does
// not have with the JSON-RPC 2.0 error -32601 (Method not found) in an
// application/json response (200), as the stdio transport answers it. The
// SDK answers such a request with a text/plain 400 ("JSON RPC not
// handled: …") for protocol versions before 2026-07-28, while the
// Streamable HTTP transport says a server MUST answer a JSON-RPC request
// with text/event-stream or application/json, and JSON-RPC asks for
// -32601 (a walkthrough with the official TypeScript SDK, 2026-11-30).
// Only that answer of the SDK is rewritten; every other passes as written
// (a stream as it is written, without buffering).
func methodNotFound(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		head, err := peekBody(r, sniffBytes)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err != nil || len(head) == sniffBytes || json.Unmarshal(head, &req) != nil || len(req.ID) == 0 || bytes.Equal(req.ID, []byte("null")) || req.Method == "" {
			h.ServeHTTP(w, r) // a batch, a notification, a response or no JSON: as the SDK answers
			return
		}
		hw := &heldWriter{ResponseWriter: w, header: http.Header{}}
		h.ServeHTTP(hw, r)
		if hw.held() && strings.HasPrefix(hw.buf.String(), "JSON RPC not handled") {
			writeRPCError(w, http.StatusOK, req.ID, -32601, "method not found: "+strings.TrimSpace(strings.TrimPrefix(hw.buf.String(), "JSON RPC not handled: ")))
			return
		}
		hw.release()
	})
}

// writeRPCError answers status with a JSON-RPC 2.0 error object of code
// and message, with id (none when nil: an error about no request the
// server could read).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	resp := map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": code, "message": message}}
	if id != nil {
		resp["id"] = id
	}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// peekBody reads up to max bytes of r's body and puts them back in front
// of the rest, so the next handler reads the whole body as sent.
func peekBody(r *http.Request, max int64) ([]byte, error) {
	head, err := io.ReadAll(io.LimitReader(r.Body, max))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	return head, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// heldWriter holds a text/plain 400 (headers and body) until the handler
// returns; any other answer goes through at once.
type heldWriter struct {
	http.ResponseWriter
	header  http.Header // until the status is known
	status  int
	through bool
	buf     bytes.Buffer
}

func (w *heldWriter) Header() http.Header {
	if w.through {
		return w.ResponseWriter.Header()
	}
	return w.header
}

func (w *heldWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code == http.StatusBadRequest && strings.HasPrefix(w.header.Get("Content-Type"), "text/plain") {
		return // held
	}
	w.pass()
}

func (w *heldWriter) pass() {
	w.through = true
	maps.Copy(w.ResponseWriter.Header(), w.header)
	w.ResponseWriter.WriteHeader(w.status)
}

func (w *heldWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.through {
		return w.buf.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes what went through (a stream); a held answer waits.
func (w *heldWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.through {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// held reports whether the answer is held (a text/plain 400).
func (w *heldWriter) held() bool { return w.status != 0 && !w.through }

// release writes a held answer as the handler wrote it, or the headers of
// one that wrote nothing.
func (w *heldWriter) release() {
	switch {
	case w.held():
		w.pass()
		w.ResponseWriter.Write(w.buf.Bytes())
	case w.status == 0:
		maps.Copy(w.ResponseWriter.Header(), w.header)
	}
}
