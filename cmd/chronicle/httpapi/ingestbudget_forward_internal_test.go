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

// A member that forwards a body it has read already keeps its room until
// the owner answers (the body is in its memory) and says so
// (BodyHeldHeader), so that the owner weighs it against its sent-on part;
// a body forwarded unread carries no such mark.
func TestForwardOfAReadBodyKeepsItsRoomAndSaysSo(t *testing.T) {
	s := &Server{IngestWait: time.Second}
	type seen struct {
		mark string
		held int64
	}
	atOwner := make(chan seen, 1)
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		atOwner <- seen{r.Header.Get(BodyHeldHeader), s.ingestHeld.Load()}
		w.WriteHeader(http.StatusOK)
	}))
	defer owner.Close()
	v := &groupView{self: "m-a", urls: map[string]string{"m-b": owner.URL}}
	body := `{"policy":"p","accepted":true,"mode":"suggestion","confidence":0.5}`
	for _, read := range []bool{true, false} {
		h := s.budgeted("POST /v1/workflows/suggest/feedback", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if read { // as policyToOwner: read, then sent on from memory
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(strings.NewReader(string(b)))
			}
			s.forward(w, r, v, "m-b", "chronicle.workflows", 0, 5*time.Second)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/workflows/suggest/feedback", strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("read %v: %d %s, want the owner's 200", read, rec.Code, rec.Body)
		}
		got := <-atOwner
		want := seen{"", 0}
		if read {
			want = seen{"1", int64(len(body))}
		}
		if got != want {
			t.Errorf("read %v: the owner saw %s %q with %d bytes held by the forwarding member, want %q and %d", read, BodyHeldHeader, got.mark, got.held, want.mark, want.held)
		}
		if n := s.ingestHeld.Load(); n != 0 {
			t.Errorf("read %v: %d bytes held after the answer, want 0", read, n)
		}
	}
}

// A body another member sent on holding its room there (ForwardedHeader
// and BodyHeldHeader) takes the budget's sent-on part, not waiting behind
// the main part and the reserve, held here by this member's own clients'
// bodies (which may be waiting for room on that member); the mark alone,
// without ForwardedHeader, is a client's and gets the main part's 429.
func TestBodySentOnHeldTakesItsOwnPart(t *testing.T) {
	s := &Server{IngestBudget: 3200, IngestWait: 200 * time.Millisecond}
	main, reserve, _, _ := s.ingestBudget()
	if !main.TryAcquire(s.ingestMainSize()) || !reserve.TryAcquire(s.ingestReserveSize) {
		t.Fatal("the budget's main part and reserve: not free at the start")
	}
	h := s.budgeted("POST /v1/workflows/suggest/feedback", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	for _, c := range []struct {
		hdr  []string
		want int
	}{
		{[]string{ForwardedHeader, "m-a", BodyHeldHeader, "1"}, http.StatusOK},
		{[]string{BodyHeldHeader, "1"}, http.StatusTooManyRequests},
		{[]string{ForwardedHeader, "m-a"}, http.StatusTooManyRequests},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/workflows/suggest/feedback", strings.NewReader(`{"policy":"p"}`))
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("headers %v with the main part and the reserve held: %d %s, want %d", c.hdr, rec.Code, rec.Body, c.want)
		}
	}
}
