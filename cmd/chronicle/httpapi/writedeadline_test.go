package httpapi_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// serveWith serves h with httpapi.NewHTTPServer on a loopback port and
// ResponseWriteTimeout shortened to d; it returns the address.
func serveWith(t *testing.T, d time.Duration, h http.Handler) string {
	t.Helper()
	old := httpapi.ResponseWriteTimeout
	httpapi.ResponseWriteTimeout = d
	t.Cleanup(func() { httpapi.ResponseWriteTimeout = old })
	hs := httpapi.NewHTTPServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// A client that asks for an answer and never reads it is cut once a write
// has waited ResponseWriteTimeout: the handler's write fails and returns,
// so its goroutine, connection and answer are freed. Before, the server
// had no write bound and the handler stayed blocked in Write for as long
// as the client stayed connected (a resource-leak walkthrough,
// 2026-12-04: 30 such clients of GET /v1/sessions?limit=500 held 30
// goroutines and descriptors for good).
func TestClientThatStopsReadingIsCut(t *testing.T) {
	answer := bytes.Repeat([]byte("x"), 32<<20) // far more than the socket buffers hold
	returned := make(chan error, 1)
	addr := serveWith(t, 300*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, err := w.Write(answer)
		returned <- err
	}))
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// the client reads nothing
	select {
	case err := <-returned:
		if err == nil {
			t.Fatal("the handler's write of 32 MiB to a client that reads nothing succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still blocked writing to a client that stopped reading, 10 s on (ResponseWriteTimeout 300ms)")
	}
}

// The bound is on each write, not on the handler: a handler that takes
// longer than ResponseWriteTimeout before answering is answered in full,
// as is a large answer read at once, and a second request on the same
// keep-alive connection, idle longer than the bound since the first
// answer, is answered (its deadline is not the first one's).
func TestWriteBoundIsNoHandlerBound(t *testing.T) {
	answer := bytes.Repeat([]byte("y"), 8<<20)
	addr := serveWith(t, 200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(600 * time.Millisecond)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write(answer)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, path := range []string{"/big", "/slow", "/big"} {
		if i > 0 {
			time.Sleep(400 * time.Millisecond) // idle past the bound
		}
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d (%s): %v", i, path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || (path == "/big" && len(b) != len(answer)) || (path == "/slow" && resp.StatusCode != http.StatusNoContent) {
			t.Fatalf("request %d (%s): status %d, %d bytes, %v", i, path, resp.StatusCode, len(b), err)
		}
	}
}

// A handler that sets its own write deadlines through
// http.ResponseController (as GET /v1/learned/stream does) keeps them:
// the per-write bound does not replace them.
func TestHandlerDeadlineIsKept(t *testing.T) {
	returned := make(chan time.Duration, 1)
	addr := serveWith(t, 5*time.Second, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		start := time.Now()
		_ = rc.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		chunk := bytes.Repeat([]byte("z"), 1<<20)
		for range 64 {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		returned <- time.Since(start)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case took := <-returned:
		if took > 3*time.Second {
			t.Fatalf("the handler's own 300ms deadline was replaced: its writes ended after %v", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's writes never ended")
	}
}
