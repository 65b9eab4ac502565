package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A learned stream's request that reaches serve while it starts is held
// and then served by the API (it was answered 503 like every other
// request, which a Server-Sent Events client takes as final: a subscriber
// walkthrough's EventSource, cut by a restart, never reconnected); any
// other request is still answered 503 starting at once.
func TestStreamRequestWaitsForTheStart(t *testing.T) {
	h := newStartingHandler(nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	type answer struct {
		code int
		ct   string
		body string
		err  error
	}
	get := func(path string, out chan<- answer) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- answer{code: resp.StatusCode, ct: resp.Header.Get("Content-Type"), body: string(b)}
	}
	stream := make(chan answer, 1)
	go get("/v1/learned/stream?from=end", stream)
	other := make(chan answer, 1)
	get("/v1/sessions", other)
	if a := <-other; a.err != nil || a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, `"starting"`) {
		t.Fatalf("another route while starting: %+v, want 503 starting", a)
	}
	select {
	case a := <-stream:
		t.Fatalf("the stream's request was answered before the start ended: %+v", a)
	case <-time.After(300 * time.Millisecond):
	}
	h.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 7\ndata: {}\n\n")
	}))
	select {
	case a := <-stream:
		if a.err != nil || a.code != http.StatusOK || a.body != "id: 7\ndata: {}\n\n" {
			t.Fatalf("held stream request: %+v, want the API's 200 stream", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held stream request was not served within 5 s of the start")
	}
}

// A start that outlasts the bound answers the stream's request with a
// 200 stream that ends at once with a retry field, which an EventSource
// follows by reconnecting (a 503 would end its reconnecting for good).
func TestStreamRequestPastTheStartBoundIsToldToReconnect(t *testing.T) {
	h := newStartingHandler(nil)
	h.wait = 100 * time.Millisecond
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/learned/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(b), "retry: 1000\n") {
		t.Fatalf("%d %q %q, want a 200 text/event-stream with retry: 1000", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// The fallback answer of a held stream request is in the request log, as
// the 503 "starting" answers are. Before, it left no line (a subscriber
// walkthrough, 2026-11-30).
func TestStreamFallbackIsRequestLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	h := newStartingHandler(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)))
	h.wait = 100 * time.Millisecond
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/v1/learned/stream", "/v1/sessions"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"path=/v1/learned/stream status=200", "path=/v1/sessions status=503"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("request log %q: no %q", buf.String(), want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
