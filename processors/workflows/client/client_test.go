package client_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// A write whose answer is lost (the service was killed after it wrote the
// event, the connection dropped) is sent again with the same event id, so
// the service applies it once; before, the client gave the caller the
// transport error, and the caller's only retry, a new call, made a new
// event id: a second checkpoint, a second command, a second decision.
func TestWriteRetriesALostAnswerUnderTheSameEventID(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			EventID string `json:"event_id"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &b)
		mu.Lock()
		ids = append(ids, b.EventID)
		n := len(ids)
		mu.Unlock()
		if n == 1 { // written, then the connection drops before the answer
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if n == 2 { // the gateway gave up waiting: the outcome is unknown
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = w.Write([]byte(`{"error":"timed out"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(workflows.WriteResult{EventID: b.EventID, Position: "chronicle.workflows:0:1"})
	}))
	defer srv.Close()
	c := client.New(srv.URL, "")
	res, err := c.Checkpoint(context.Background(), "w1", 0)
	if err != nil {
		t.Fatalf("checkpoint: %v (sent %q)", err, ids)
	}
	if len(ids) != 3 || ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] || res.EventID != ids[0] {
		t.Fatalf("sent %q, answered %q: want three sends of one event id", ids, res.EventID)
	}
}

// A read is not retried past its context, and a 4xx is not retried.
func TestWriteDoesNotRetryARefusal(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":"not pending","pointer":"/data/processed_commands"}`))
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "").Checkpoint(context.Background(), "w1", 0, "c1")
	var ce *client.Error
	if n != 1 || err == nil || !errorsAs(err, &ce) || ce.Status != 409 {
		t.Fatalf("%d sends, %v", n, err)
	}
}

func errorsAs(err error, ce **client.Error) bool {
	e, ok := err.(*client.Error)
	*ce = e
	return ok
}

// A send that timed out (a service that hangs) is not sent again: the
// caller waits one HTTP timeout, not one per attempt (a review: six
// attempts of the default 60 s would have been six minutes).
func TestWriteDoesNotResendATimeout(t *testing.T) {
	var mu sync.Mutex
	n := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	c := client.New(srv.URL, "")
	c.HTTP = &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := c.Checkpoint(context.Background(), "w1", 0)
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if err == nil || n != 1 || took > 5*time.Second {
		t.Fatalf("%d sends in %v, error %v: want one send and its timeout", n, took, err)
	}
}

// An answer larger than MaxAnswerBytes is an error saying so. Before, the
// client cut it at 64 MiB and parsed the rest: "unexpected end of JSON
// input" (a workflows walkthrough, a 68 MB state).
func TestAnAnswerAboveTheLimitSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"workflow_id":"w","messages":["`)
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = 'x'
		}
		for range client.MaxAnswerBytes>>20 + 1 {
			_, _ = w.Write(chunk)
		}
		_, _ = io.WriteString(w, `"]}`)
	}))
	defer srv.Close()
	_, err := (&client.Client{Base: srv.URL}).State(context.Background(), "w")
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("%v, want an error naming the size", err)
	}
}

// A call given an empty id returns ErrEmptyID and sends nothing (it sent
// POST /v1/workflows//updates, answered 405 with a list of routes: a Go
// embedder's walkthrough).
func TestEmptyIDIsRefusedBeforeSending(t *testing.T) {
	var mu sync.Mutex
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent++
		mu.Unlock()
		http.Error(w, "unexpected", http.StatusMethodNotAllowed)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "")
	ctx := context.Background()
	_, err1 := c.Update(ctx, "", 0, "messages", "hi")
	_, err2 := c.State(ctx, "")
	_, err3 := c.Answer(ctx, "w1", "", "approve", "")
	_, err4 := c.History(ctx, "")
	for i, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, client.ErrEmptyID) {
			t.Errorf("call %d: %v, want ErrEmptyID", i, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d requests sent", sent)
	}
}

// A Client without a usable Base fails at once naming Base: it failed
// with net/http's `unsupported protocol scheme ""`, and a write only after
// 7 s of resends (a transport error). A token ending in a newline is sent
// without it: it failed every call with "invalid header field value" (a
// Go-package walkthrough, 2026-12-04).
func TestBaseIsNamedAndTokenTrimmed(t *testing.T) {
	ctx := context.Background()
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://h"} {
		start := time.Now()
		_, err := (&client.Client{Base: base}).Update(ctx, "w1", 0, "tasks", []any{1})
		if err == nil || !strings.Contains(err.Error(), "Client.Base") || time.Since(start) > time.Second {
			t.Errorf("Base %q: %v after %v, want an error naming Client.Base at once", base, err, time.Since(start))
		}
	}
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"workflow not found"}`)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "tok\n").State(ctx, "w1")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusNotFound || auth != "Bearer tok" {
		t.Errorf("a token ending in a newline: %v, Authorization %q; want the service's 404 and %q", err, auth, "Bearer tok")
	}
}

// A write that no resend can change is not sent again: a token with a
// control character inside it is refused before anything is sent (every
// send failed with net/http's "invalid header field value"), and a TLS
// failure — here a certificate the client does not trust — ends the call
// after one connection. Before, both were sent again for about 7 s, as a
// transport error whose outcome is unknown (left out by a Go-package
// walkthrough, 2026-12-04).
func TestWriteDoesNotResendWhatCannotSucceed(t *testing.T) {
	ctx := context.Background()
	_, err := client.New("http://127.0.0.1:1", "first\nsecond").Update(ctx, "w1", 0, "tasks", []any{1})
	if err == nil || !strings.Contains(err.Error(), "Client.Token") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("a token with a newline inside: %v, want an error naming Client.Token", err)
	}
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request reached the handler through an untrusted certificate")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes' "bad certificate"
	srv.StartTLS()
	defer srv.Close()
	_, err = (&client.Client{Base: srv.URL, HTTP: &http.Client{Timeout: 10 * time.Second}}).Update(ctx, "w1", 0, "tasks", []any{1})
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		t.Fatalf("a write to an untrusted certificate: %v, want x509.UnknownAuthorityError", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("%d connections for one write to an untrusted certificate, want 1 (no resend)", conns)
	}
}
