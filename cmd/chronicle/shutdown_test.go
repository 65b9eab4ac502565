package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve stopped with SIGTERM while a client follows GET /v1/learned/stream:
// the stream ends at once with a last "error" event naming the shutdown
// and the position to resume from, and the process exits 0 (startServe's
// cleanup checks the exit). It used to hold the shutdown for its 10 s and
// exit 1 ("context deadline exceeded").
func TestServeStopsWithAnOpenStream(t *testing.T) {
	got := make(chan string, 1)
	t.Cleanup(func() { // runs after startServe's cleanup (SIGTERM, exit checked)
		select {
		case last := <-got:
			if !strings.Contains(last, "shutting down") || !strings.Contains(last, `"resume"`) {
				t.Errorf("the stream's last data line: %q; want the shutdown and a resume position", last)
			}
		case <-time.After(5 * time.Second):
			t.Error("the stream did not end with a last event")
		}
	})
	base := startServe(t)
	resp, err := http.Get(base + "/v1/learned/stream?from=end")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %s", resp.Status)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		last := ""
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				last = d
			}
		}
		got <- last
	}()
}
