package httpapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
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

// POST …/resume without checkpoint_id resumes from the last checkpoint
// read from the projection (its row and the id the processor recorded
// when it applied it), and so does GET …/checkpoints: neither reads the
// partition back. Before, both scanned the workflow's partition from
// offset 0 (History), so a resume after a crash took longer the more
// every workflow of the partition had written.
func TestWorkflowResumeScansNoLog(t *testing.T) {
	_, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	const wf = "scan/w-resume"
	for i := 0; i < 20; i++ {
		m.w(c.Update(ctx, "noise", 0, events.ChannelMessages, "noise"))
	}
	m.w(c.Update(ctx, wf, 0, events.ChannelTasks, map[string]any{"id": "t1"}))
	m.w(c.Checkpoint(ctx, wf, 0))
	m.w(c.Update(ctx, wf, 1, events.ChannelTasks, map[string]any{"id": "t2"}))
	last := m.w(c.Checkpoint(ctx, wf, 1))
	m.w(c.Update(ctx, wf, 2, events.ChannelTasks, map[string]any{"id": "t3-crashed"}))
	for i := 0; i < 5; i++ {
		m.w(c.Update(ctx, "noise", 0, events.ChannelMessages, "noise"))
	}
	before := workflows.LogScans()
	r := m.w(c.Resume(ctx, wf, ""))
	if n := workflows.LogScans() - before; n != 0 {
		t.Fatalf("a resume without checkpoint_id scanned the partition %d times", n)
	}
	if r.CheckpointID != last.CheckpointID || r.NextLayer == nil || *r.NextLayer != 2 || len(r.State.Tasks) != 2 {
		t.Fatalf("resumed from %q (next layer %v, %d tasks), want the last checkpoint %q, next layer 2, 2 tasks", r.CheckpointID, r.NextLayer, len(r.State.Tasks), last.CheckpointID)
	}
	h, err := c.History(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	if n := workflows.LogScans() - before; n != 0 {
		t.Fatalf("the checkpoint history scanned the partition %d times", n)
	}
	if len(h) != 2 || h[1].CheckpointID != last.CheckpointID {
		t.Fatalf("history %+v, want 2 checkpoints ending with %q", h, last.CheckpointID)
	}
	// after a resume to the first checkpoint, a resume without
	// checkpoint_id goes to the one resumed to, which the state names, not
	// the last saved (History's last): that undid the rewind (decided so
	// on 2026-12-06, after a walkthrough; TestDefaultResumeIsTheStatesCheckpoint),
	// still without a scan of the log
	m.w(c.Resume(ctx, wf, h[0].CheckpointID))
	before = workflows.LogScans()
	if r := m.w(c.Resume(ctx, wf, "")); r.CheckpointID != h[0].CheckpointID {
		t.Fatalf("after a rewind, a resume without checkpoint_id went to %q, want the state's %q", r.CheckpointID, h[0].CheckpointID)
	}
	if n := workflows.LogScans() - before; n != 0 {
		t.Fatalf("a resume without checkpoint_id after a rewind scanned the partition %d times", n)
	}
}

// A data directory written before the processor kept checkpoint ids (no
// cpid/ rows) still names each checkpoint by its log position: the state,
// the history and a resume without checkpoint_id fall back to the log (one
// fetch at the offset the idempotency key holds, the routes' source) and
// answer the ids the rows would have given.
func TestWorkflowCheckpointIDsOfAnOlderDirectory(t *testing.T) {
	dir := t.TempDir()
	_, c, stop := startAt(t, dir)
	ctx, m := context.Background(), musts{t, c}
	const wf = "old/w"
	m.w(c.Update(ctx, wf, 0, events.ChannelTasks, map[string]any{"id": "t1"}))
	first := m.w(c.Checkpoint(ctx, wf, 0))
	m.w(c.Update(ctx, wf, 1, events.ChannelTasks, map[string]any{"id": "t2"}))
	last := m.w(c.Checkpoint(ctx, wf, 1))
	stop()

	// the directory as an older version left it: no cpid/ rows
	db, err := pebble.Open(pipeline.ProjectionsDir(dir), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("p/" + workflows.Name + "/cpid/")
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(append([]byte(nil), prefix[:len(prefix)-1]...), '/'+1)})
	if err != nil {
		t.Fatal(err)
	}
	var deleted int
	for it.First(); it.Valid(); it.Next() {
		if err := db.Delete(append([]byte(nil), it.Key()...), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if err := errors.Join(it.Close(), db.Close()); err != nil {
		t.Fatal(err)
	}
	if deleted != 2 {
		t.Fatalf("deleted %d cpid/ rows, want the 2 checkpoints'", deleted)
	}

	_, c, _ = startAt(t, dir)
	m = musts{t, c}
	if v := m.state(wf); v.CheckpointID != last.CheckpointID {
		t.Errorf("state names checkpoint %q without its cpid/ row, want %q", v.CheckpointID, last.CheckpointID)
	}
	h, err := c.History(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].CheckpointID != first.CheckpointID || h[1].CheckpointID != last.CheckpointID {
		t.Errorf("history %+v, want checkpoints %q and %q", h, first.CheckpointID, last.CheckpointID)
	}
	if r := m.w(c.Resume(ctx, wf, "")); r.CheckpointID != last.CheckpointID || r.NextLayer == nil || *r.NextLayer != 2 {
		t.Errorf("a resume without checkpoint_id went to %q (next layer %v), want %q and layer 2", r.CheckpointID, r.NextLayer, last.CheckpointID)
	}
}
