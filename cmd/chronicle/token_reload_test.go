package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve --tokens re-reads its token file on SIGHUP: a token created while
// it runs is accepted without a restart (before, it was a 401 until one: a
// walkthrough's finding), and serve keeps running (SIGHUP ended it).
func TestServeReloadsTokensOnSIGHUP(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	createToken(t, file, "first", "project:a", "project:a")
	base, logs, proc := startServeProcess(t, "--tokens", file)
	second := createToken(t, file, "second", "project:b", "project:b")
	whoami := func() int {
		req, _ := http.NewRequest("GET", base+"/v1/whoami", nil)
		req.Header.Set("Authorization", "Bearer "+second)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := whoami(); code != 401 {
		t.Fatalf("a token created after start, before SIGHUP: %d, want 401", code)
	}
	if err := proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "SIGHUP: 2 API tokens reloaded from "+file) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged within 10 s of SIGHUP:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := whoami(); code != 200 {
		t.Fatalf("the new token after SIGHUP: %d, want 200", code)
	}
}
