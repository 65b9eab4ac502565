package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
