package main

import (
	"strings"
	"testing"
)

// serve --workflow-state-max-mib: MiB to bytes, 0 for no bound (-1 for
// httpapi.Server), a negative or absurd value refused naming the flag.
func TestWorkflowStateMaxFlag(t *testing.T) {
	for _, c := range []struct {
		mib, want int
		err       string
	}{
		{16, 16 << 20, ""}, {1, 1 << 20, ""}, {0, -1, ""},
		{-1, 0, "--workflow-state-max-mib -1: negative"},
		{1<<20 + 1, 0, "--workflow-state-max-mib 1048577: above"},
	} {
		got, err := workflowStateMax(c.mib)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d: %v, want an error containing %q", c.mib, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%d: %d, %v; want %d", c.mib, got, err, c.want)
		}
	}
}
