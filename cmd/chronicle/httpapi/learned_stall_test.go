package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
)

// A stream whose client stops reading is cut once a write has waited
// LearnedWriteTimeout, freeing its slot: with LearnedMaxStreams 1, a
// second stream is a 503 with Retry-After while the stalled one holds the
// slot, and a 200 once it was cut. Before, a client that never read held
// its stream (a broker client, ~19 goroutines) for as long as it stayed
// connected, streams had no bound, and stalled ones held serve's shutdown
// up for its whole grace (a walkthrough, 2026-11-30).
func TestLearnedStreamStalledClientIsCut(t *testing.T) {
	oldWT, oldMax := httpapi.LearnedWriteTimeout, httpapi.LearnedMaxStreams
	httpapi.LearnedWriteTimeout, httpapi.LearnedMaxStreams = 2*time.Second, 1
	t.Cleanup(func() { httpapi.LearnedWriteTimeout, httpapi.LearnedMaxStreams = oldWT, oldMax })
	p, _ := setup(t)
	// a plain server: the test server's conformance wrapper keeps what it
	// answers in memory, so no write of it would wait for the client
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// more learned bytes than the socket buffers of both ends hold
	big := strings.Repeat("x", 800<<10)
	for i := range 16 {
		env, err := events.New(events.MemoryCreated, "chronicle/memories", fmt.Sprintf("big-%d", i), time.Now(),
			events.MemoryCreatedData{MemoryID: fmt.Sprintf("m-%d", i), Title: "t", Description: big, Outcome: "success", Source: "explicit", Confidence: 0.8, Evidence: 1, RecordedEventID: fmt.Sprintf("rec-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if err := p.Producer.PublishDerived(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "GET /v1/learned/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	second := func() *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/learned/stream?from=end&follow=false")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	time.Sleep(700 * time.Millisecond) // the stalled stream took its slot
	if resp := second(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second stream while the stalled one is open: %d (Retry-After %q); want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := second()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled stream still holds its slot 20 s on (LearnedWriteTimeout %v): %d", httpapi.LearnedWriteTimeout, resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// One token holds at most LearnedMaxStreamsPerToken learned streams:
// with the share 2 and the server's cap 4, token b's third stream is a
// 503 naming the token's share while a's stream is still served, and the
// server's cap still holds. Before,
// the cap was the server's only: one tenant holding every slot left all
// the others' streams 503 for as long as it stayed connected (a
// tenant-isolation walkthrough, 2026-11-30: 64 streams of one token, the
// 65th of another refused).
func TestLearnedStreamsPerToken(t *testing.T) {
	oldMax, oldPer := httpapi.LearnedMaxStreams, httpapi.LearnedMaxStreamsPerToken
	httpapi.LearnedMaxStreams, httpapi.LearnedMaxStreamsPerToken = 4, 2
	t.Cleanup(func() { httpapi.LearnedMaxStreams, httpapi.LearnedMaxStreamsPerToken = oldMax, oldPer })
	p, _ := setup(t)
	tokens := access.File{Tokens: []access.Token{
		{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}},
		{Name: "b", SHA256: access.Hash("tok-b"), Read: []string{"project:b"}, Write: []string{"project:b"}},
		{Name: "wo", SHA256: access.Hash("tok-wo"), Write: []string{"project:a"}},
	}}
	// a plain server: the conformance wrapper keeps what it answers until
	// the handler returns, and these streams stay open
	srv := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens}).Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(token string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/learned/stream?from=end", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	for i := range 2 {
		resp, err := open("tok-b")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close() // held open until the test ends
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("b's stream %d: %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp, err := open("tok-b")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "LearnedMaxStreamsPerToken") {
		t.Fatalf("b's third stream: %d (Retry-After %q) %s; want 503 naming the token's share", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, err = open("tok-a")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a's stream while b holds its share: %d, want 200", resp.StatusCode)
	}
	// a token that reads nothing gets its empty stream, as every list
	// route answers it (the access conformance suite), within its share
	resp, err = open("tok-wo")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the write-only token's stream: %d, want 200", resp.StatusCode)
	}
	// the server's 4 are taken (b 2, a 1, wo 1): a's second is refused
	// by the server's cap
	resp, err = open("tok-a")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "LearnedMaxStreams)") {
		t.Fatalf("a's second stream with the server's 4 taken: %d %s, want 503 naming the server's cap", resp.StatusCode, body)
	}
	// an EventSource fails for good on any answer but a 200: the caps
	// answer it a 200 stream that says when to reconnect and ends with
	// event: error naming the cap, as a broker outage does (before: the
	// 503, which closed it; a walkthrough's finding)
	for _, c := range []struct{ token, cap string }{{"tok-b", "LearnedMaxStreamsPerToken"}, {"tok-a", "LearnedMaxStreams)"}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/learned/stream?from=end", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body) // the stream ends at once
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(body), "\nretry: 5000\n") ||
			!strings.Contains(string(body), "event: error\ndata: ") || !strings.Contains(string(body), c.cap) {
			t.Errorf("an EventSource's stream past %s: %d %s; want a 200 event stream with retry: 5000 and event: error naming the cap", c.cap, resp.StatusCode, body)
		}
	}
}
