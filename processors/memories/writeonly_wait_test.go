package memories_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// A write-only recorder is answered once the broker has its recording,
// without waiting for the memory bank: its answer is the id and a message
// alone, so the wait only told it how long the apply took, which differs
// between a merge into another writer's memory and a new memory (a timing
// oracle, left open by the tenant-isolation review). Here nothing ever
// applies the recording (the service's store is one no processor writes)
// and the wait is an hour: a caller that may read the scope is still
// waiting when its context ends, a write-only one is answered. Before, the
// write-only call waited too and ended with its context.
func TestWriteOnlyRecordingDoesNotWaitForTheApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	idle, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	s := &memories.Service{Producer: p.Producer, Store: idle, RecordWait: time.Hour}
	rec := search.Record{Title: "Quote the refund total", Description: "State the exact refund amount.",
		Content: "Compute the refund, then tell the user the amount before cancelling.", Outcome: "success", Scope: "project:a"}

	writeOnly := rec
	writeOnly.Readable = func(string) bool { return false }
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	got, err := s.Record(wctx, writeOnly)
	if err != nil || got.ID == "" || !got.Withheld {
		t.Fatalf("write-only recording: %+v, %v; want its id, withheld, without waiting for the apply", got, err)
	}

	reader := rec
	reader.Readable = func(string) bool { return true }
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer rcancel()
	if got, err := s.Record(rctx, reader); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader's recording: %+v, %v; want it still waiting for the apply when its context ends", got, err)
	}
}
