package main

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serve --pprof-listen serves Go's profiler on a loopback address, said on
// stderr; a goroutine dump of the running service answers there. An
// address beyond loopback is refused before anything starts (exit 64,
// naming the flag): the pages have no authentication.
func TestServePprofListen(t *testing.T) {
	_, logs := startServeLogs(t, "--pprof-listen", "127.0.0.1:0")
	var url string
	for _, line := range strings.Split(logs.String(), "\n") {
		if _, u, ok := strings.Cut(line, "chronicle: profiler on "); ok {
			url = strings.TrimSpace(u)
		}
	}
	if url == "" {
		t.Fatalf("serve did not say where the profiler answers:\n%s", logs.String())
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(url + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile: total") || !strings.Contains(string(body), "processors") {
		t.Fatalf("GET %sgoroutine?debug=1: %d, want the service's goroutine dump:\n%.500s", url, resp.StatusCode, body)
	}

	out, err := exec.Command(binary, "serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--pprof-listen", "0.0.0.0:0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 || !strings.Contains(string(out), "--pprof-listen 0.0.0.0:0: a loopback address only") {
		t.Fatalf("serve --pprof-listen 0.0.0.0:0: %v\n%s\nwant exit 64 naming the flag and loopback", err, out)
	}
}
