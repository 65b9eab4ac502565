package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// rowBytes sums the keys and values of the workflows projection's rows
// under prefix.
func rowBytes(t *testing.T, store *projections.Store, prefix string) (n, rows int) {
	t.Helper()
	if err := store.Scan(Name, prefix, "", func(k string, v []byte) (bool, error) {
		n += len(k) + len(v)
		rows++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n, rows
}

// The security walkthrough's reproduction, scaled down: a state grown
// large by updates, then many checkpoints that change only the layer.
// Each checkpoint must cost what changed, not the whole state again
// (before, every cp/ row held the complete state: 40 checkpoints of a
// 17 MB state wrote about 700 MB), and every checkpoint must still read
// back as the state after its event, also through a resume.
func TestCheckpointsStoreWhatChanged(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("x", 20_000)
	for i := range 10 {
		h.must(scopeA, fmt.Sprintf("m%d", i), events.WorkflowReducerApplied, upd("w1", 0, "messages", fmt.Sprintf(`{"i":%d,"text":%q}`, i, big)))
	}
	h.must(scopeA, "t1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", fmt.Sprintf(`{"id":"t1","out":%q}`, big)))
	h.must(scopeA, "ctx", events.WorkflowReducerApplied, upd("w1", 0, "context", `{"user":"mia_li_3668"}`))
	key := events.EntityKey(scopeA, "w1")
	stateRow, _, err := h.store.Get(Name, stateKey(key))
	if err != nil {
		t.Fatal(err)
	}
	const checkpoints = 40
	want := make([]State, 0, checkpoints+1)
	for i := range checkpoints {
		h.must(scopeA, fmt.Sprintf("cp%d", i), events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: i + 1})
		want = append(want, h.state(scopeA, "w1"))
	}
	// one change of a channel between checkpoints costs that channel once
	h.must(scopeA, "t2", events.WorkflowReducerApplied, upd("w1", 40, "tasks", `{"id":"t2"}`))
	h.must(scopeA, "cp40", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 40})
	want = append(want, h.state(scopeA, "w1"))

	cpBytes, cpRows := rowBytes(t, h.store, "cp/")
	blobBytes, blobRows := rowBytes(t, h.store, "cb/")
	if cpRows != checkpoints+1 {
		t.Fatalf("%d checkpoint rows, want %d", cpRows, checkpoints+1)
	}
	// messages and tasks once, tasks again after t2 (context and the
	// queues are below blobMinBytes)
	if blobRows != 3 {
		t.Fatalf("%d blob rows, want 3 (messages, tasks, tasks after t2)", blobRows)
	}
	if limit := 2 * len(stateRow); cpBytes+blobBytes > limit {
		t.Fatalf("%d checkpoints of a %d-byte state stored %d + %d bytes, more than %d", checkpoints+1, len(stateRow), cpBytes, blobBytes, limit)
	}
	if per := cpBytes / cpRows; per > 1024 {
		t.Fatalf("a checkpoint row is %d bytes on average; its large fields belong in blob rows", per)
	}

	cps, err := Checkpoints(h.store, key)
	if err != nil || len(cps) != len(want) {
		t.Fatalf("Checkpoints: %d, %v", len(cps), err)
	}
	for i, cp := range cps {
		if got, w := js(cp.State), js(want[i]); got != w {
			t.Fatalf("checkpoint %d reads back as %.300s…\nwant %.300s…", i, got, w)
		}
		if one, ok, err := CheckpointByEvent(h.store, key, cp.EventID); err != nil || !ok || js(one) != js(cp) {
			t.Fatalf("CheckpointByEvent(%s): %v %v", cp.EventID, ok, err)
		}
	}
	page, _, found, ok, err := HistoryPage(h.store, key, len(want), "", 0, 1<<30)
	if err != nil || !found || !ok || len(page) != len(want) || js(page[3].Checkpoint) != js(cps[3]) {
		t.Fatalf("HistoryPage: %d entries, %v %v %v", len(page), found, ok, err)
	}
	// a page is bounded by the bytes it reads, the blobs included
	page, next, _, _, err := HistoryPage(h.store, key, len(want), "", 0, len(stateRow))
	if err != nil || len(page) != 1 || next == "" {
		t.Fatalf("a page of about one state: %d entries, next %q, %v", len(page), next, err)
	}

	// a resume to the first checkpoint restores its state (the tasks
	// blob before t2, the layer)
	h.must(scopeA, "r", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:12", CheckpointEventID: "cp0"})
	s := h.state(scopeA, "w1")
	if got := taskIDs(s); len(got) != 1 || got[0] != "t1" || s.CurrentLayer != 1 || len(s.Messages) != 10 {
		t.Fatalf("after resuming to cp0: tasks %v, layer %d, %d messages", got, s.CurrentLayer, len(s.Messages))
	}
}

// A checkpoint row written before blob rows (the complete state inline)
// still reads, and a resume to it restores its state.
func TestCheckpointRowWithTheStateInline(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("y", 1000)
	h.must(scopeA, "m", events.WorkflowReducerApplied, upd("w1", 0, "messages", fmt.Sprintf(`%q`, big)))
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1})
	want := h.state(scopeA, "w1")
	key := events.EntityKey(scopeA, "w1")
	// rewrite the row as a Chronicle before this change wrote it
	env, err := events.New(events.WorkflowReducerApplied, "test", "rewrite", h.at, upd("w1", 0, "messages", `1`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Apply(Name, projections.Position{Topic: string(events.TopicWorkflows), Offset: 1000}, &env, func(tx *projections.Tx, _ *events.Envelope) error {
		return tx.SetJSON(checkpointKey(key, 0), Checkpoint{CheckpointRef: *want.Checkpoint, State: want})
	}); err != nil {
		t.Fatal(err)
	}
	if raw, _, _ := h.store.Get(Name, checkpointKey(key, 0)); !strings.Contains(string(raw), big) {
		t.Fatal("the rewritten row does not hold the state inline")
	}
	h.must(scopeA, "m2", events.WorkflowReducerApplied, upd("w1", 1, "messages", `"later"`))
	cps, err := Checkpoints(h.store, key)
	if err != nil || len(cps) != 1 || js(cps[0].State) != js(want) {
		t.Fatalf("the inline row reads as %v, %v", cps, err)
	}
	h.must(scopeA, "r", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:12", CheckpointEventID: "cp0"})
	if s := h.state(scopeA, "w1"); len(s.Messages) != 1 || s.CurrentLayer != 1 {
		t.Fatalf("after resuming to the inline row: %d messages, layer %d", len(s.Messages), s.CurrentLayer)
	}
}

// A blob row that is missing is an error naming the checkpoint and the
// field, not a state without that field.
func TestCheckpointMissingBlobIsAnError(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "m", events.WorkflowReducerApplied, upd("w1", 0, "messages", fmt.Sprintf(`%q`, strings.Repeat("z", 500))))
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1})
	key := events.EntityKey(scopeA, "w1")
	env, err := events.New(events.WorkflowReducerApplied, "test", "drop", h.at, upd("w1", 0, "messages", `1`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Apply(Name, projections.Position{Topic: string(events.TopicWorkflows), Offset: 1000}, &env, func(tx *projections.Tx, _ *events.Envelope) error {
		return tx.Scan("cb/", func(k string, _ []byte) (bool, error) { return true, tx.Delete(k) })
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := Checkpoints(h.store, key); err == nil || !strings.Contains(err.Error(), "checkpoint 0") || !strings.Contains(err.Error(), "messages") {
		t.Fatalf("a missing blob: %v", err)
	}
}

// Service.MaxStateBytes: Check refuses a write that grows the state above
// the bound, naming the member that carries the growth; a state already
// above it (applied from the log, where no bound applies) can still be
// checkpointed, resumed, answered and completed, and a smaller state's
// writes pass.
// A negative bound checks nothing.
func TestStateBoundLetsAStateAboveItEnd(t *testing.T) {
	h := newHarness(t)
	for i := range 3 {
		h.must(scopeA, fmt.Sprintf("m%d", i), events.WorkflowReducerApplied, upd("w1", 0, "messages", fmt.Sprintf("%q", strings.Repeat("x", 3000))))
	}
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1})
	env := func(typ events.Type, id string, data any) events.Envelope {
		t.Helper()
		e, err := events.New(typ, "test", id, h.at, data)
		if err != nil {
			t.Fatal(err)
		}
		e.Scope = scopeA
		return e
	}
	svc := &Service{Store: h.store, MaxStateBytes: 8 << 10}
	var ref *Refusal
	err := svc.Check(env(events.WorkflowReducerApplied, "m9", upd("w1", 1, "tasks", `{"id":"t1"}`)))
	if !errors.As(err, &ref) || !errors.Is(err, ErrStateTooLarge) || ref.Pointer != "/data/update" {
		t.Fatalf("a growing update of a state above the bound: %v", err)
	}
	err = svc.Check(env(events.WorkflowDecisionRequested, "d1", events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d1", Kind: "agent", Question: "go on?"}))
	if !errors.As(err, &ref) || ref.Pointer != "/data/question" {
		t.Fatalf("a decision request of a state above the bound: %v", err)
	}
	h.must(scopeA, "d0", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d0", Kind: "human", Question: "ship it?"})
	for _, e := range []events.Envelope{
		env(events.WorkflowDecisionAnswered, "a0", events.DecisionAnsweredData{WorkflowID: "w1", DecisionID: "d0", Answer: "yes", Comment: strings.Repeat("c", 500)}),
		env(events.WorkflowCheckpointSaved, "cp1", events.CheckpointSavedData{WorkflowID: "w1", Layer: 2}),
		env(events.WorkflowResumed, "r1", events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:3", CheckpointEventID: "cp0"}),
		env(events.WorkflowCompleted, "done", events.WorkflowCompletedData{WorkflowID: "w1", Outcome: "failure"}),
	} {
		if err := svc.Check(e); err != nil {
			t.Fatalf("%s of a state above the bound: %v", e.Type, err)
		}
	}
	if err := (&Service{Store: h.store, MaxStateBytes: -1}).Check(env(events.WorkflowReducerApplied, "m9", upd("w1", 1, "tasks", `{"id":"t1"}`))); err != nil {
		t.Fatalf("no bound: %v", err)
	}
	if err := svc.Check(env(events.WorkflowReducerApplied, "o1", upd("other", 0, "tasks", `{"id":"t1"}`))); err != nil {
		t.Fatalf("a small workflow's write: %v", err)
	}
}
