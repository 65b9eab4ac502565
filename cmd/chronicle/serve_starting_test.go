package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
)

// TestServeAnswersWhileStarting: an instance restarted after kill -9 on a
// separate broker waits for its dead self's group session to end before
// its pipeline is up; meanwhile its listener answers every request at
// once with 503, Retry-After and {"status": "starting"}, then the API.
// Before, it accepted connections and answered nothing until then (an
// operator's walkthrough: 6.9 s of accepted, silent connections; forwards
// to it ended in 504 after 5 s).
func TestServeAnswersWhileStarting(t *testing.T) {
	brokerAddr, httpAddr := freePort(t), freePort(t)
	brk := startBrokerProcess(t, t.TempDir(), brokerAddr)
	t.Cleanup(func() { _ = brk.Process.Kill(); _ = brk.Wait() })
	data := t.TempDir()
	serve := func(stderr *mcptest.Buffer) *exec.Cmd {
		cmd := exec.Command(binary, "serve", "--data", data, "--brokers", brokerAddr, "--http", httpAddr, "--session-timeout", "6s")
		if stderr != nil {
			cmd.Stderr = stderr
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	healthz := func() (int, map[string]any, string, error) {
		resp, err := hc.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return 0, nil, "", err
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m, resp.Header.Get("Retry-After"), nil
	}
	waitOK := func(within time.Duration) (starting int) {
		deadline := time.Now().Add(within)
		for {
			code, m, ra, err := healthz()
			switch {
			case err == nil && code == http.StatusOK:
				return starting
			case err == nil && code == http.StatusServiceUnavailable && m["status"] == "starting":
				if ra == "" {
					t.Fatalf("503 starting without Retry-After: %v", m)
				}
				starting++
			case err != nil && starting > 0:
				t.Fatalf("after %d 'starting' answers the listener stopped answering: %v", starting, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("not ready within %v: %d %v %v", within, code, m, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := serve(nil)
	waitOK(60 * time.Second)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	var stderr mcptest.Buffer
	serve(&stderr)
	if n := waitOK(60 * time.Second); n == 0 {
		t.Fatal("the restarted instance never answered 'starting' while its dead self's session ran out")
	}
	// each 503 has its request-log line, as every answer of the API
	// (they had none)
	if out := stderr.String(); !strings.Contains(out, "path=/healthz status=503") {
		t.Fatalf("no request-log line for a 503 starting answer; stderr:\n%s", out)
	}
}
