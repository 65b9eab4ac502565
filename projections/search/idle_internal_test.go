package search

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// The background sync waits while processors commit, at most its bound,
// and goes at once when they are idle.
func TestWaitIdleYieldsToProcessors(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ix := &Index{store: store}
	start := time.Now()
	ix.waitIdle(context.Background(), time.Second)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("waited %v with no processor running", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a processor committing every 5 ms
		for off := int64(0); ctx.Err() == nil; off++ {
			env, _ := events.New(events.MemoryFeedback, "t", "e", time.Unix(0, 0), events.MemoryFeedbackData{MemoryID: "m", Signal: "task_completion", Positive: true})
			env.ID = time.Now().String()
			_, _ = store.Apply("p", projections.Position{Topic: "t", Offset: off}, &env, func(*projections.Tx, *events.Envelope) error { return nil })
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	start = time.Now()
	ix.waitIdle(ctx, 300*time.Millisecond)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("returned after %v while a processor was committing, want its 300 ms bound", d)
	}
}
