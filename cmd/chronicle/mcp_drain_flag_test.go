package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// `chronicle mcp --drain-wait` sets how long, once stdin ends, it waits
// for the answers of the requests read before the end (it was the 65 s of
// mcpserver.DefaultDrainWait, no flag: the last closing note's gap). A
// zero or negative value is refused at start naming the flag; a short one
// ends the wait on a call the service does not answer and names it.
func TestMCPDrainWaitFlag(t *testing.T) {
	for _, v := range []string{"0", "-1s"} {
		cmd := exec.Command(binary, "mcp", "--api", "http://127.0.0.1:1", "--scope", "org:default", "--drain-wait", v)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--drain-wait "+v) || !strings.Contains(string(out), "must be a positive duration") {
			t.Errorf("chronicle mcp --drain-wait %s: %v\n%s\nwant an error naming --drain-wait and that it must be positive", v, err, out)
		}
	}

	// a service that accepts connections and never answers (a port of
	// 23000-23999, the tests' range)
	var ln net.Listener
	for p := 23000; p < 24000 && ln == nil; p++ {
		ln, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	}
	if ln == nil {
		t.Skip("no free port in 23000-23999")
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"t","description":"d","content":"c","outcome":"success"}}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp", "--api", "http://"+ln.Addr().String(), "--scope", "org:default", "--drain-wait", "1s")
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(in), &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err == nil || !strings.Contains(stderr.String(), "not answered within 1s") || !strings.Contains(stderr.String(), "id 2 (tools/call memory_record)") {
		t.Fatalf("chronicle mcp --drain-wait 1s with a call the service never answers: %v after %s\nstderr:\n%s\nstdout:\n%s\nwant a non-zero exit naming id 2 and the 1s wait", err, took, stderr.String(), stdout.String())
	}
	if took > 20*time.Second {
		t.Errorf("chronicle mcp --drain-wait 1s took %s to exit", took)
	}
}
