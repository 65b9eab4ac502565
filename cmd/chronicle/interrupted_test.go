package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A producing command stopped by a signal says so, and that running it
// again is safe; it read as the broker's failure ("not acknowledged by the
// broker: … context canceled": an SRE's walkthrough, 2026-11-30). An error
// without a signal is left as it is.
func TestInterruptedSaysSo(t *testing.T) {
	produce := errors.New("events: not acknowledged by the broker: context canceled")
	ctx, cancel := context.WithCancel(context.Background())
	if err := interrupted(ctx, produce); err != produce {
		t.Fatalf("no signal: %v, want the error as it is", err)
	}
	if err := interrupted(ctx, nil); err != nil {
		t.Fatalf("no error: %v", err)
	}
	cancel()
	err := interrupted(ctx, produce)
	if !errors.Is(err, produce) || !strings.HasPrefix(err.Error(), "interrupted by a signal") || !strings.Contains(err.Error(), "running the command again is safe") {
		t.Fatalf("after a signal: %v", err)
	}
}
