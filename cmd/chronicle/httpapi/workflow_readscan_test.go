package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// GET /v1/workflows/{id} names the last checkpoint by its log position
// without scanning the partition when the routes wrote the checkpoint
// (its idempotency key holds the offset): before, every read of a workflow
// with a checkpoint read the whole partition from offset 0, every other
// workflow's records included (a 3-event workflow took 100 ms behind 54 MB
// of another's updates, and a read grows with the log until its 30 s
// bound; found by an agent-runtime developer's walkthrough). A checkpoint
// written by another source is still found, by the scan.
func TestWorkflowStateReadScansNoLog(t *testing.T) {
	p, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	const wf = "scan/w-1"
	for i := 0; i < 20; i++ {
		m.w(c.Update(ctx, "noise", 0, events.ChannelMessages, "noise"))
	}
	m.w(c.Update(ctx, wf, 0, events.ChannelTasks, map[string]any{"id": "t1"}))
	cp := m.w(c.Checkpoint(ctx, wf, 0))
	before := workflows.LogScans()
	if v := m.state(wf); v.CheckpointID != cp.CheckpointID || v.CheckpointID == "" {
		t.Fatalf("state names checkpoint %q, the write answered %q", v.CheckpointID, cp.CheckpointID)
	}
	if n := workflows.LogScans() - before; n != 0 {
		t.Fatalf("a state read scanned the partition %d times", n)
	}
	// a checkpoint from another source (straight to the log): the scan
	env, err := events.NewVerbatim(events.WorkflowCheckpointSaved, "test/elsewhere", "cp-elsewhere", time.Now(), events.CheckpointSavedData{WorkflowID: wf, Layer: 1})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = events.DefaultScope
	pos, err := (&workflows.Service{Store: p.Store, Producer: p.Producer}).Submit(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if v := m.state(wf); v.CheckpointID != pos.String() {
		t.Fatalf("state names checkpoint %q, the other source's write is at %s", v.CheckpointID, pos)
	}
}
