package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// --stall-after below 1 s (MinStallAfter) is refused naming the flag: the
// stall clock runs from a partition's last committed batch, so under any
// load (a lag above 0 at the moment /healthz looks) 1ns or 10ms made
// /healthz answer 503 "stalled" between two batches, and an orchestrator
// restarting on it restarted a healthy service (a time walkthrough,
// 2026-12-04). 0 keeps its meaning (the default, 30 s).
func TestStallAfterBelowASecondIsRefused(t *testing.T) {
	for _, v := range []string{"1ns", "10ms", "999ms"} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		out, err := exec.CommandContext(ctx, binary, "serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--stall-after", v).CombinedOutput()
		cancel()
		if want := "--stall-after: " + v + ", must be 0 (the default, 30s) or at least 1s"; err == nil || !strings.Contains(string(out), want) {
			t.Errorf("serve --stall-after %s: %v\n%s\nwant a refusal saying %q", v, err, out, want)
		}
	}
}
