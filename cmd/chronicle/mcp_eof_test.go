package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// `chronicle mcp` given a batch of requests on stdin and then EOF (a
// client that pipes them: printf '…' | chronicle mcp) answers every
// request it read before the EOF, then exits 0; the memories the
// memory_record calls recorded are in the service. Before, only
// initialize was answered: the SDK's connection stops writing once its
// reader sees EOF, so every tools/call still queued or running was
// dropped unanswered (the memory_record never ran) and the exit code was 0
// (found by a new user's walkthrough).
func TestMCPAnswersEveryRequestBeforeStdinEOF(t *testing.T) {
	base := startServe(t)
	rec := func(id int, title string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":%q,"description":"when a batch is piped, every call runs","content":"pipe the requests, then close stdin","outcome":"success","tags":["eof"]}}}`, id, title)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		rec(2, "piped record one"),
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		rec(4, "piped record two"),
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"piped requests"}}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp", "--api", base)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CHRONICLE_TOKEN=") })
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chronicle mcp: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	answered := map[int]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var resp struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID == nil {
			continue // a notification
		}
		if resp.Error != nil {
			t.Errorf("request %d answered an error: %s", *resp.ID, resp.Error)
		}
		answered[*resp.ID] = resp.Result
	}
	var missing []int
	for id := 1; id <= 5; id++ {
		if _, ok := answered[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("requests %v were not answered before exit\nstdout:\n%s\nstderr:\n%s", missing, stdout.String(), stderr.String())
	}
	for _, id := range []int{2, 4} {
		var res struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				ID    string `json:"id"`
				Scope string `json:"scope"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(answered[id], &res); err != nil || res.IsError || res.StructuredContent.ID == "" {
			t.Errorf("memory_record (request %d): %s, want a recorded memory", id, answered[id])
			continue
		}
		u := base + "/v1/memories/" + url.PathEscape(res.StructuredContent.ID) + "?scope=" + url.QueryEscape(res.StructuredContent.Scope)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d, want the memory request %d recorded", u, resp.StatusCode, id)
		}
	}
}
