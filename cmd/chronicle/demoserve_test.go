package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// `demo --serve` (make run) prints the digest `demo` prints, run after run:
// the pair worker, whose retrievals read the memory bank while the
// processors fill it, starts only after the summary (three runs before
// printed three digests). It still runs: a session evaluated below 95 gets
// its PAIR context.
func TestDemoServePrintsTheDemosDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("two demo runs")
	}
	clean, _ := cleanDemo(t)
	want := clean.Digest

	addr := freePort(t)
	cmd := exec.Command(binary, "demo", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--json", "--serve", "--http", addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	summary := make(chan Summary, 1)
	go func() {
		var s Summary
		if json.NewDecoder(out).Decode(&s) == nil {
			summary <- s
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case s := <-summary:
		if s.Digest != want {
			t.Fatalf("demo --serve printed digest %s, demo %s", s.Digest, want)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("no summary from demo --serve within 3 minutes; stderr:\n%s", errb.String())
	}

	// taubench-airline/0/1 is evaluated composite 0 (below 95)
	url := fmt.Sprintf("http://%s/v1/sessions/taubench-airline%%2F0%%2F1/improvement", addr)
	deadline := time.Now().Add(time.Minute)
	for {
		var imp struct {
			Status  string          `json:"status"`
			Context json.RawMessage `json:"context"`
		}
		if resp, err := http.Get(url); err == nil {
			json.NewDecoder(resp.Body).Decode(&imp)
			resp.Body.Close()
		}
		if len(imp.Context) > 0 && string(imp.Context) != "null" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PAIR context for taubench-airline/0/1 within a minute of the summary (status %q); stderr:\n%s", imp.Status, errb.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// the member advertises its URL, as serve does (it was empty)
	resp, err := http.Get("http://" + addr + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cl struct {
		Members []struct {
			URL string `json:"url"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cl); err != nil || len(cl.Members) != 1 || cl.Members[0].URL != "http://"+addr {
		t.Fatalf("GET /v1/cluster under demo --serve: %+v (%v); want one member advertising http://%s", cl, err, addr)
	}
}
