package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A member that forwards a write to its owner gives the body's room back
// in its own budget when the forward starts: the body streams through to
// the owner, which weighs it against its budget, so it is counted once.
// Kept on both, two members forwarding to each other under load filled
// each other's budgets with requests neither held.
func TestForwardGivesBackTheBodysRoom(t *testing.T) {
	s := &Server{IngestWait: time.Second}
	heldAtOwner := make(chan int64, 1)
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		heldAtOwner <- s.ingestHeld.Load() // the forwarding member's, while it waits for this answer
		w.WriteHeader(http.StatusAccepted)
	}))
	defer owner.Close()
	v := &groupView{self: "m-a", urls: map[string]string{"m-b": owner.URL}}
	heldBefore := make(chan int64, 1)
	h := s.budgeted("POST /v1/memories", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heldBefore <- s.ingestHeld.Load()
		s.forward(w, r, v, "m-b", "chronicle.memories", 0, 5*time.Second)
	}))
	body := `{"title":"forwarded","content":"once"}`
	req := httptest.NewRequest(http.MethodPost, "/v1/memories", strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("forwarded: %d %s, want the owner's 202", rec.Code, rec.Body)
	}
	if got := <-heldBefore; got != int64(len(body)) {
		t.Errorf("before the forward: %d bytes held, want the body's %d", got, len(body))
	}
	if got := <-heldAtOwner; got != 0 {
		t.Errorf("while the owner answered the forward: the forwarding member held %d bytes, want 0 (the owner holds the body)", got)
	}
	if got := s.ingestHeld.Load(); got != 0 {
		t.Errorf("after the answer: %d bytes held, want 0", got)
	}
}
