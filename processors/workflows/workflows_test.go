package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

func TestReduceTable(t *testing.T) {
	type step struct {
		channel, update string
	}
	cases := []struct {
		name  string
		steps []step
		want  State // only the four channels are compared
		err   string
	}{
		{name: "messages append one value", steps: []step{{"messages", `{"role":"user","content":"hi"}`}},
			want: State{Messages: raws(`{"role":"user","content":"hi"}`)}},
		{name: "an array appends its elements in order", steps: []step{{"tasks", `[{"id":"t1"},{"id":"t2"}]`}, {"tasks", `{"id":"t3"}`}},
			want: State{Tasks: raws(`{"id":"t1"}`, `{"id":"t2"}`, `{"id":"t3"}`)}},
		{name: "appends keep log order across updates", steps: []step{{"decisions", `"b"`}, {"decisions", `"a"`}, {"decisions", `["c","a"]`}},
			want: State{Decisions: raws(`"b"`, `"a"`, `"c"`, `"a"`)}},
		{name: "an empty array appends nothing", steps: []step{{"messages", `"x"`}, {"messages", `[]`}},
			want: State{Messages: raws(`"x"`)}},
		{name: "a nested array is one element", steps: []step{{"tasks", `[[1,2]]`}},
			want: State{Tasks: raws(`[1,2]`)}},
		{name: "context merges: update wins, other keys stay", steps: []step{{"context", `{"a":1,"b":{"x":1}}`}, {"context", `{"b":{"y":2},"c":null}`}},
			want: State{Context: map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`{"y":2}`), "c": json.RawMessage(`null`)}}},
		{name: "values are stored compacted", steps: []step{{"messages", "{ \"a\" :\n 1 }"}},
			want: State{Messages: raws(`{"a":1}`)}},
		{name: "channels are independent", steps: []step{{"messages", `1`}, {"tasks", `2`}, {"context", `{"k":"v"}`}, {"decisions", `3`}},
			want: State{Messages: raws(`1`), Tasks: raws(`2`), Decisions: raws(`3`), Context: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}}},
		{name: "context refuses an array", steps: []step{{"context", `[1]`}}, err: "context channel merges objects, got an array"},
		{name: "null is refused", steps: []step{{"tasks", `null`}}, err: "null or absent on channel tasks"},
		{name: "a null element is refused", steps: []step{{"messages", `["a",null]`}}, err: "/data/update/1: null element on channel messages"},
		{name: "unknown channel", steps: []step{{"inbox", `1`}}, err: `/data/channel: "inbox"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s State
			var err error
			for _, st := range c.steps {
				if err = Reduce(&s, st.channel, json.RawMessage(st.update)); err != nil {
					break
				}
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrBadUpdate) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := State{Messages: s.Messages, Tasks: s.Tasks, Decisions: s.Decisions, Context: s.Context}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %s\nwant %s", js(got), js(c.want))
			}
		})
	}
}

// An array update with a null element is refused whole: none of its
// elements is appended (the state's lists never hold null, and an update
// applies all or nothing).
func TestReduceNullElementAppendsNothing(t *testing.T) {
	var s State
	if err := Reduce(&s, events.ChannelTasks, json.RawMessage(`{"id":"t1"}`)); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{events.ChannelMessages, events.ChannelTasks, events.ChannelDecisions} {
		err := Reduce(&s, ch, json.RawMessage(`[{"id":"t2"}, null, {"id":"t3"}]`))
		var fe *FieldError
		if !errors.Is(err, ErrBadUpdate) || !errors.As(err, &fe) || fe.Pointer != "/data/update/1" {
			t.Fatalf("%s: %v, want a refusal at /data/update/1", ch, err)
		}
	}
	if got := js(State{Messages: s.Messages, Tasks: s.Tasks, Decisions: s.Decisions}); got != js(State{Tasks: raws(`{"id":"t1"}`)}) {
		t.Fatalf("after the refused updates: %s", got)
	}
}

func raws(vs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = json.RawMessage(v)
	}
	return out
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// harness applies events through the real Store.Apply path.
type harness struct {
	t     *testing.T
	store *projections.Store
	off   int64
	at    time.Time
}

func newHarness(t *testing.T) *harness {
	st, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &harness{t: t, store: st, at: time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)}
}

// apply applies an event of typ for workflow wf in scope with data; it
// returns the processor's error.
func (h *harness) apply(scope, id string, typ events.Type, data any) error {
	h.t.Helper()
	h.at = h.at.Add(time.Second)
	env, err := events.New(typ, "test", id, h.at, data)
	if err != nil {
		h.t.Fatal(err)
	}
	env.Scope = scope
	if err := events.Validate(&env); err != nil {
		h.t.Fatalf("%s: %v", id, err)
	}
	pos := projections.Position{Topic: string(events.TopicWorkflows), Offset: h.off}
	h.off++
	_, err = h.store.Apply(Name, pos, &env, Processor{}.Apply)
	return err
}

func (h *harness) must(scope, id string, typ events.Type, data any) {
	h.t.Helper()
	if err := h.apply(scope, id, typ, data); err != nil {
		h.t.Fatalf("%s: %v", id, err)
	}
}

func (h *harness) state(scope, wf string) State {
	h.t.Helper()
	s, ok, err := Get(h.store, events.EntityKey(scope, wf))
	if err != nil || !ok {
		h.t.Fatalf("state of %s/%s: %v %v", scope, wf, ok, err)
	}
	return s
}

func upd(wf string, layer int, ch, update string) events.ReducerAppliedData {
	return events.ReducerAppliedData{WorkflowID: wf, Layer: layer, Channel: ch, Update: json.RawMessage(update)}
}

func taskIDs(s State) []string {
	var out []string
	for _, raw := range s.Tasks {
		var t struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &t)
		out = append(out, t.ID)
	}
	return out
}

const scopeA = "project:a"

// Decisions: a human decision pauses the workflow until answered; the
// answer is appended to the decisions channel after earlier decision
// updates; answering twice or an unknown id is refused.
func TestDecisionPointsAndCommands(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "e1", events.WorkflowReducerApplied, upd("w1", 0, "decisions", `{"note":"start"}`))
	h.must(scopeA, "e2", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d1", Kind: "agent", Question: "continue or replan?"})
	if s := h.state(scopeA, "w1"); s.Status != StatusWaitingForAgent {
		t.Fatalf("status %s after an AIL request", s.Status)
	}
	h.must(scopeA, "e3", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d2", Kind: "human", Question: "cancel reservation?", Options: []string{"approve", "reject"}})
	if s := h.state(scopeA, "w1"); s.Status != StatusWaitingForHuman || len(s.PendingDecisions) != 2 {
		t.Fatalf("after a HIL request: %s, %d pending", s.Status, len(s.PendingDecisions))
	}
	if err := h.apply(scopeA, "e3b", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d2", Kind: "human", Question: "again"}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("a second pending d2: %v", err)
	}
	h.must(scopeA, "e4", events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w1", DecisionID: "d2", Answer: "approve", By: "human:ana"})
	s := h.state(scopeA, "w1")
	if s.Status != StatusWaitingForAgent || len(s.Decisions) != 2 || !strings.Contains(string(s.Decisions[1]), `"answer":"approve"`) {
		t.Fatalf("after the answer: %s %s", s.Status, js(s.Decisions))
	}
	if err := h.apply(scopeA, "e5", events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w1", DecisionID: "d2", Answer: "reject"}); !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), "/data/decision_id") {
		t.Fatalf("answering d2 twice: %v", err)
	}
	h.must(scopeA, "e6", events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w1", DecisionID: "d1", Answer: "continue"})
	if s := h.state(scopeA, "w1"); s.Status != StatusRunning {
		t.Fatalf("status %s with nothing pending", s.Status)
	}
	// commands queue in order and leave the queue when a checkpoint
	// names them processed
	h.must(scopeA, "c1", events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: "w1", CommandID: "c1", Command: "inject_tasks", Args: json.RawMessage(`{"tasks":[{"id":"t9"}]}`)})
	h.must(scopeA, "c2", events.WorkflowCommandEnqueued, replanCmd("w1", "c2", "x", []string{"get_user_details"}))
	if s := h.state(scopeA, "w1"); len(s.PendingCommands) != 2 || s.PendingCommands[0].CommandID != "c1" {
		t.Fatalf("queue %s", js(s.PendingCommands))
	}
	if err := h.apply(scopeA, "cp-bad", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0, ProcessedCommands: []string{"c7"}}); !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), "/data/processed_commands") {
		t.Fatalf("processing an unknown command: %v", err)
	}
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0, ProcessedCommands: []string{"c1"}})
	if s := h.state(scopeA, "w1"); len(s.PendingCommands) != 1 || s.PendingCommands[0].CommandID != "c2" || s.Checkpoint == nil || s.Checkpoint.EventID != "cp0" {
		t.Fatalf("after the checkpoint: %s", js(s))
	}
	h.must(scopeA, "done", events.WorkflowCompleted, events.WorkflowCompletedData{WorkflowID: "w1", Outcome: "success"})
	if err := h.apply(scopeA, "late", events.WorkflowReducerApplied, upd("w1", 1, "tasks", `1`)); !errors.Is(err, ErrCompleted) {
		t.Fatalf("an update after completion: %v", err)
	}
}

// Crash during a layer: tasks t3 of layer 1 were recorded, then the
// executor died. Resuming from the last checkpoint (layer 0) drops t3 from
// the state; running layer 1 again records t3 and t4 once each.
func TestResumeFromCheckpointNoLostOrDoubledTask(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", `[{"id":"t1"},{"id":"t2"}]`))
	h.must(scopeA, "a2", events.WorkflowReducerApplied, upd("w1", 0, "context", `{"user":"mia_li_3668"}`))
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})
	h.must(scopeA, "a3", events.WorkflowReducerApplied, upd("w1", 1, "tasks", `{"id":"t3"}`))
	h.must(scopeA, "a4", events.WorkflowReducerApplied, upd("w1", 1, "context", `{"user":"changed"}`))
	if err := h.apply(scopeA, "r0", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:2", CheckpointEventID: "nope"}); !errors.Is(err, ErrUnknownCheckpoint) {
		t.Fatalf("resume from an unknown checkpoint: %v", err)
	}
	h.must(scopeA, "r1", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:2", CheckpointEventID: "cp0"})
	s := h.state(scopeA, "w1")
	if got := taskIDs(s); !reflect.DeepEqual(got, []string{"t1", "t2"}) || string(s.Context["user"]) != `"mia_li_3668"` || s.CurrentLayer != 0 || s.Resumes != 1 {
		t.Fatalf("after resume: tasks %v, context %s, layer %d", got, js(s.Context), s.CurrentLayer)
	}
	h.must(scopeA, "b3", events.WorkflowReducerApplied, upd("w1", 1, "tasks", `[{"id":"t3"},{"id":"t4"}]`))
	h.must(scopeA, "cp1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1})
	s = h.state(scopeA, "w1")
	if got := taskIDs(s); !reflect.DeepEqual(got, []string{"t1", "t2", "t3", "t4"}) {
		t.Fatalf("tasks after re-running layer 1: %v (want each once)", got)
	}
	cps, err := Checkpoints(h.store, events.EntityKey(scopeA, "w1"))
	if err != nil || len(cps) != 2 || cps[1].Seq != 1 || cps[1].EventID != "cp1" {
		t.Fatalf("checkpoints %s %v (a resume must not reuse a seq)", js(cps), err)
	}
	if err := h.apply(scopeA, "cp1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 2}); err == nil {
		t.Fatal("a conflicting repeat of checkpoint event cp1 was applied")
	}
}

// A command enqueued after the last checkpoint (a human's abort while the
// executor runs a layer) is still queued after the crashed executor
// resumes from that checkpoint; the checkpoint's own pending command comes
// first, and a command a later checkpoint processed is pending again only
// when the resumed checkpoint had it pending. Before, the queue was the
// checkpoint's: the abort vanished.
func TestResumeKeepsCommandsQueuedAfterTheCheckpoint(t *testing.T) {
	h := newHarness(t)
	cmd := func(id, c string) events.CommandEnqueuedData {
		return events.CommandEnqueuedData{WorkflowID: "w1", CommandID: id, Command: c, By: "human:ops"}
	}
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "e1", events.WorkflowCommandEnqueued, cmd("c1", "approve"))
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})
	h.must(scopeA, "e2", events.WorkflowCommandEnqueued, cmd("c2", "abort"))
	h.must(scopeA, "cp1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1, ProcessedCommands: []string{"c1"}})
	h.must(scopeA, "e3", events.WorkflowCommandEnqueued, cmd("c3", "abort"))
	h.must(scopeA, "a2", events.WorkflowReducerApplied, upd("w1", 2, "tasks", `{"id":"t2"}`))
	// the executor died in layer 2: resume from the last checkpoint
	h.must(scopeA, "r1", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:4", CheckpointEventID: "cp1"})
	if got := commandIDs(h.state(scopeA, "w1")); !reflect.DeepEqual(got, []string{"c2", "c3"}) {
		t.Fatalf("queue after resuming from cp1: %v, want [c2 c3] (c3 was enqueued after it)", got)
	}
	// a rewind to cp0: c1 (pending there, processed by cp1) is pending
	// again, and the queue keeps c2 and c3
	h.must(scopeA, "r2", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:2", CheckpointEventID: "cp0"})
	if got := commandIDs(h.state(scopeA, "w1")); !reflect.DeepEqual(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("queue after rewinding to cp0: %v, want [c1 c2 c3]", got)
	}
}

func commandIDs(s State) []string {
	out := []string{}
	for _, c := range s.PendingCommands {
		out = append(out, c.CommandID)
	}
	return out
}

// A fork copies the parent's checkpoint state from its event, applies the
// update through the reducers, and never touches the parent; a fork into
// an existing workflow is refused. Scopes: the same id in another scope is
// another workflow.
func TestForkAndScopes(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w1", 0, "messages", `"hello"`))
	h.must(scopeA, "a2", events.WorkflowReducerApplied, upd("w1", 0, "context", `{"cabin":"economy","n":1}`))
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})
	cp, ok, err := CheckpointByEvent(h.store, events.EntityKey(scopeA, "w1"), "cp0")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	parent, _ := json.Marshal(cp.State)
	fork := events.ForkedData{WorkflowID: "w2", ParentWorkflowID: "w1", ParentCheckpointID: "chronicle.workflows:0:2", State: parent,
		Update: map[string]json.RawMessage{"context": json.RawMessage(`{"cabin":"business"}`), "messages": json.RawMessage(`["what if business?"]`)}}
	h.must(scopeA, "f1", events.WorkflowForked, fork)
	s := h.state(scopeA, "w2")
	if string(s.Context["cabin"]) != `"business"` || string(s.Context["n"]) != `1` || len(s.Messages) != 2 || s.Parent == nil || s.Parent.WorkflowID != "w1" || s.Checkpoints != 0 {
		t.Fatalf("fork: %s", js(s))
	}
	if p := h.state(scopeA, "w1"); string(p.Context["cabin"]) != `"economy"` || len(p.Messages) != 1 {
		t.Fatalf("the parent changed: %s", js(p))
	}
	if err := h.apply(scopeA, "f2", events.WorkflowForked, fork); !errors.Is(err, ErrExists) {
		t.Fatalf("a fork into an existing workflow: %v", err)
	}
	h.must("project:b", "b1", events.WorkflowReducerApplied, upd("w1", 0, "messages", `"other"`))
	if b := h.state("project:b", "w1"); len(b.Messages) != 1 || string(b.Messages[0]) != `"other"` {
		t.Fatalf("project:b's w1: %s", js(b))
	}
	sc, err := Scopes(h.store, "w1")
	if err != nil || fmt.Sprint(sc) != "[project:a project:b]" {
		t.Fatalf("scopes of w1: %v %v", sc, err)
	}
}

// The record key is the workflow's EntityKey even when the event carries
// a sessionid, so all of a workflow's events share a partition.
func TestKeyIsTheWorkflow(t *testing.T) {
	env, _ := events.New(events.WorkflowReducerApplied, "test", "k1", time.Now(), upd("w1", 0, "tasks", `1`))
	env.SessionID, env.Scope = "sess-1", scopeA
	k, err := events.Key(&env)
	if err != nil || k != "project:a/w1" {
		t.Fatalf("key %q %v", k, err)
	}
	if ti, _ := events.Lookup(events.WorkflowReducerApplied); ti.Topic != events.TopicWorkflows {
		t.Fatalf("reducer updates on %s", ti.Topic)
	}
}

// The speculation threshold starts at 0.92, holds until 50 feedbacks,
// falls 0.01 per feedback while success ≥ 95% and waste < 10% (to 0.85),
// and rises when speculative executions are wasted.
func TestAdaptiveThreshold(t *testing.T) {
	h := newHarness(t)
	key := events.EntityKey(scopeA, "default")
	fb := func(i int, accepted bool, mode string) {
		h.must(scopeA, fmt.Sprintf("f%d", i), events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "default", Accepted: accepted, Mode: mode, Confidence: 0.9})
	}
	p, err := GetPolicy(h.store, key)
	if err != nil || p.Threshold != 0.92 {
		t.Fatalf("initial %v %v", p.Threshold, err)
	}
	for i := range 49 {
		fb(i, true, "suggestion")
	}
	if p, _ = GetPolicy(h.store, key); p.Threshold != 0.92 || p.Feedbacks != 49 {
		t.Fatalf("before 50 feedbacks: %+v", p)
	}
	fb(49, true, "speculative_execution")
	if p, _ = GetPolicy(h.store, key); p.Threshold != 0.91 {
		t.Fatalf("50 accepted: %v", p.Threshold)
	}
	for i := 50; i < 70; i++ {
		fb(i, true, "speculative_execution")
	}
	if p, _ = GetPolicy(h.store, key); p.Threshold != 0.85 {
		t.Fatalf("at the floor: %v", p.Threshold)
	}
	// 11 wasted speculative executions: the first two keep waste below 10%
	// (1/22, 2/23), from the third (3/24) the threshold rises 0.01 each
	// time: 9 × 0.01 above the floor
	for i := 70; i < 81; i++ {
		fb(i, false, "speculative_execution")
	}
	if p, _ = GetPolicy(h.store, key); p.Threshold != 0.94 || p.Waste < 0.10 || p.Success >= 0.95 {
		t.Fatalf("after waste: %+v", p)
	}
	if other, _ := GetPolicy(h.store, events.EntityKey("project:b", "default")); other.Threshold != 0.92 || other.Feedbacks != 0 {
		t.Fatalf("another scope's policy moved: %+v", other)
	}
}

// A suggestion has one verdict: a second feedback for the same
// suggestion_id (another event id) is refused and counts nothing; the
// same suggestion id under another policy, or feedback without an id,
// counts.
func TestSuggestionFeedbackCountsOnce(t *testing.T) {
	h := newHarness(t)
	key := events.EntityKey(scopeA, "default")
	h.must(scopeA, "f1", events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "default", SuggestionID: "s1", Accepted: true, Mode: "suggestion", Confidence: 0.9})
	err := h.apply(scopeA, "f2", events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "default", SuggestionID: "s1", Accepted: false, Mode: "suggestion", Confidence: 0.9})
	if !errors.Is(err, ErrDuplicateID) || !strings.Contains(err.Error(), "/data/suggestion_id") {
		t.Fatalf("a second verdict for s1: %v", err)
	}
	h.must(scopeA, "f3", events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "other", SuggestionID: "s1", Accepted: true, Mode: "suggestion", Confidence: 0.9})
	h.must(scopeA, "f4", events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "default", Accepted: true, Mode: "suggestion", Confidence: 0.9})
	h.must(scopeA, "f5", events.WorkflowSuggestionFeedback, events.SuggestionFeedbackData{Policy: "default", Accepted: true, Mode: "suggestion", Confidence: 0.9})
	if p, _ := GetPolicy(h.store, key); p.Feedbacks != 3 || p.Window != "aaa" {
		t.Fatalf("policy after s1 twice and two without an id: %+v", p)
	}
}

// TestCheckNamesTheField: Service.Check takes the refused field from the
// processor's *FieldError, not from the error's text: the pointer and the
// reason for every kind of refusal. (A fork's update of the context
// channel that is no object, the nested refusal this table had, is now
// refused by the event's schema before the processor is asked: Check
// validates first, as Submit does.) The text parse it replaces
// named "/" for a refusal of the event's own id.
func TestCheckNamesTheField(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "e1", events.WorkflowReducerApplied, upd("w1", 0, "messages", `"hi"`))
	h.must(scopeA, "e2", events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d1", Kind: "agent", Question: "q"})
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})
	svc := Service{Store: h.store}
	for _, tc := range []struct {
		typ             events.Type
		data            any
		pointer, reason string
		is              error
		id              string
	}{
		{events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: "w1", DecisionID: "d9", Answer: "x"}, "/data/decision_id", `"d9": not pending`, ErrNotPending, ""},
		{events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: "w1", DecisionID: "d1", Kind: "agent", Question: "again"}, "/data/decision_id", `"d1": id already in use (pending)`, ErrDuplicateID, ""},
		{events.WorkflowReducerApplied, upd("w1", 0, "context", `[1]`), "/data/update", "the context channel merges objects, got an array", ErrBadUpdate, ""},
		{events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:9", CheckpointEventID: "nope"}, "/data/checkpoint_event_id", `"nope": unknown checkpoint`, ErrUnknownCheckpoint, ""},
		{events.WorkflowForked, events.ForkedData{WorkflowID: "w1", ParentWorkflowID: "w0", ParentCheckpointID: "chronicle.workflows:0:1", State: json.RawMessage(`{}`)}, "/data/workflow_id", "workflow already exists (a fork starts a new workflow)", ErrExists, ""},
		{events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1}, "/id", `checkpoint event "cp0": id already in use`, ErrDuplicateID, "cp0"},
	} {
		env, err := events.New(tc.typ, "test", "check-"+string(tc.typ), h.at.Add(time.Minute), tc.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scopeA
		if tc.id != "" { // the id of an applied event, from another source
			env.ID, env.Source = tc.id, "other"
		}
		err = svc.Check(env)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Pointer != tc.pointer || ref.Reason != tc.reason || !errors.Is(err, tc.is) || !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %#v (%v); want %s: %q wrapping %v", tc.typ, ref, err, tc.pointer, tc.reason, tc.is)
		}
	}
	// what the event's schema refuses is the schema's error, as Submit
	// would answer it, before the processor is asked: a fork's update of
	// the context channel that is no object
	env, err := events.New(events.WorkflowForked, "test", "check-schema", h.at.Add(time.Minute), events.ForkedData{WorkflowID: "w2", ParentWorkflowID: "w1", ParentCheckpointID: "chronicle.workflows:0:1", State: json.RawMessage(`{}`), Update: map[string]json.RawMessage{"context": json.RawMessage(`"x"`)}})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = scopeA
	var ve *events.ValidationError
	if err := svc.Check(env); !errors.As(err, &ve) || ve.Pointer != "/data/update/context" {
		t.Errorf("a fork's update the schema refuses: %v; want the schema's error at /data/update/context", err)
	}
}

// The checkpoints of workflow "w" are its own, not those of "w/x" too
// (ids may hold "/": the prefix cp/<key>/ took in the longer id's rows;
// found next to the same fault in the memory bank).
func TestCheckpointsOfAnIDThatExtendsAnother(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "a2", events.WorkflowReducerApplied, upd("w/x", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "cp-w", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w", Layer: 0})
	h.must(scopeA, "cp-wx", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w/x", Layer: 0})
	for id, want := range map[string]string{"w": "cp-w", "w/x": "cp-wx"} {
		cps, err := Checkpoints(h.store, events.EntityKey(scopeA, id))
		if err != nil || len(cps) != 1 || cps[0].EventID != want {
			t.Fatalf("checkpoints of %s: %s %v, want %s only", id, js(cps), err, want)
		}
	}
}

// An event id that extends another workflow's id ("w" with event "x/c1",
// "w/x" with event "c1") is its own workflow's: the checkpoint is not
// refused as a reused id, the event is not taken for the other's, and a
// suggestion id of policy "t" does not answer for policy "t/x" (ce/, ev/
// and sg/ rows named key "/" id collided; found by a walkthrough).
func TestEventIDsThatExtendAnotherID(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w/x", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "a2", events.WorkflowReducerApplied, upd("w", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "c1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w/x", Layer: 0})
	h.must(scopeA, "x/c1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w", Layer: 0})
	for _, c := range []struct{ workflow, event string }{{"w/x", "c1"}, {"w", "x/c1"}} {
		if ok, err := Applied(h.store, events.EntityKey(scopeA, c.workflow), c.event); err != nil || !ok {
			t.Fatalf("%s's event %s: applied %v %v", c.workflow, c.event, ok, err)
		}
	}
	h.must(scopeA, "e1", events.WorkflowReducerApplied, upd("v/x", 0, "tasks", `{"id":"t1"}`))
	if ok, err := Applied(h.store, events.EntityKey(scopeA, "v"), "x/e1"); err != nil || ok {
		t.Fatalf("v's event x/e1, never written: applied %v %v", ok, err)
	}
	fb := func(policy, sid string) events.SuggestionFeedbackData {
		return events.SuggestionFeedbackData{Policy: policy, SuggestionID: sid, Accepted: true, Mode: "suggestion", Confidence: 0.7}
	}
	h.must(scopeA, "f1", events.WorkflowSuggestionFeedback, fb("t", "x/s9"))
	h.must(scopeA, "f2", events.WorkflowSuggestionFeedback, fb("t/x", "s9"))
}

// A command the resumed checkpoint itself processed is not pending after
// the resume, even when an earlier rewind made it pending again: rewinding
// to cp0 (c1 pending) and then resuming from cp1 (which processed c1) must
// not hand c1 to the executor a second time.
func TestResumeDoesNotRequeueACommandTheCheckpointProcessed(t *testing.T) {
	h := newHarness(t)
	h.must(scopeA, "a1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "e1", events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: "w1", CommandID: "c1", Command: "approve", By: "human:ops"})
	h.must(scopeA, "cp0", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})
	h.must(scopeA, "cp1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1, ProcessedCommands: []string{"c1"}})
	h.must(scopeA, "r1", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:2", CheckpointEventID: "cp0"})
	h.must(scopeA, "r2", events.WorkflowResumed, events.ResumedData{WorkflowID: "w1", CheckpointID: "chronicle.workflows:0:3", CheckpointEventID: "cp1"})
	if got := commandIDs(h.state(scopeA, "w1")); len(got) != 0 {
		t.Fatalf("queue after resuming from cp1, which processed c1: %v, want []", got)
	}
}

// The processor records each checkpoint's id (its event's position) when
// it applies it, so History and LastCheckpoint answer from the projection:
// here without any broker (nil brokers: a read of the log would fail). A
// rejected checkpoint records nothing; the dry run (Store.Try) has no
// position and writes nothing.
func TestCheckpointIDsAreRecordedAtApply(t *testing.T) {
	h := newHarness(t)
	key := events.EntityKey(scopeA, "w1")
	h.must(scopeA, "e1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "c1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0}) // offset 1
	h.must(scopeA, "e2", events.WorkflowReducerApplied, upd("w1", 1, "tasks", `{"id":"t2"}`))
	if err := h.apply(scopeA, "c-bad", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1, ProcessedCommands: []string{"nope"}}); err == nil {
		t.Fatal("a checkpoint naming no pending command was applied")
	}
	h.must(scopeA, "c2", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1}) // offset 4
	ctx := context.Background()
	hist, err := History(ctx, nil, h.store, key)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{string(events.TopicWorkflows) + ":0:1", string(events.TopicWorkflows) + ":0:4"}
	if len(hist) != 2 || hist[0].CheckpointID != want[0] || hist[1].CheckpointID != want[1] || hist[1].EventID != "c2" {
		t.Fatalf("history %s, want ids %v", js(hist), want)
	}
	last, ok, err := LastCheckpoint(ctx, nil, h.store, key, "")
	if err != nil || !ok || last.CheckpointID != want[1] || last.Layer != 1 {
		t.Fatalf("last checkpoint %s %v %v, want %s at layer 1", js(last), ok, err, want[1])
	}
	if id, err := CheckpointIDOf(ctx, nil, h.store, key, "", "c1"); err != nil || id != want[0] {
		t.Fatalf("CheckpointIDOf c1 = %q %v, want %s", id, err, want[0])
	}
	env, err := events.New(events.WorkflowCheckpointSaved, "test", "c3", h.at.Add(time.Second), events.CheckpointSavedData{WorkflowID: "w1", Layer: 2})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = scopeA
	if err := h.store.Try(Name, &env, Processor{}.Apply); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := CheckpointIDAt(h.store, key, 2); err != nil || ok {
		t.Fatalf("the dry run recorded a checkpoint id: %v %v", ok, err)
	}
	// a workflow without a checkpoint has none, and its history is empty
	h.must(scopeA, "e3", events.WorkflowReducerApplied, upd("w2", 0, "tasks", `{"id":"t1"}`))
	if _, ok, err := LastCheckpoint(ctx, nil, h.store, events.EntityKey(scopeA, "w2"), ""); err != nil || ok {
		t.Fatalf("a workflow without checkpoints has a last one: %v %v", ok, err)
	}
	if hist, err := History(ctx, nil, h.store, events.EntityKey(scopeA, "w2")); err != nil || len(hist) != 0 {
		t.Fatalf("history of a workflow without checkpoints: %v %v", hist, err)
	}
}

// The state as of a checkpoint id is read from the projection when the
// id is one the processor recorded (its cpid/ row): here without any
// broker (nil brokers, as chronicle inspect). A position that is no
// recorded id of the workflow is ErrNoCheckpoint then (every checkpoint of
// the workflow has its id recorded), not a read of a log there is none
// of. Before, CheckpointAt always fetched the record at the position.
func TestCheckpointAtReadsTheRecordedIDs(t *testing.T) {
	h := newHarness(t)
	key := events.EntityKey(scopeA, "w1")
	h.must(scopeA, "e1", events.WorkflowReducerApplied, upd("w1", 0, "tasks", `{"id":"t1"}`))
	h.must(scopeA, "c1", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 0})  // offset 1
	h.must(scopeA, "x1", events.WorkflowReducerApplied, upd("w10", 0, "tasks", `{"id":"t1"}`))                    // offset 2, a workflow whose id extends w1's
	h.must(scopeA, "x2", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w10", Layer: 0}) // offset 3
	h.must(scopeA, "e2", events.WorkflowReducerApplied, upd("w1", 1, "tasks", `{"id":"t2"}`))
	h.must(scopeA, "c2", events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w1", Layer: 1}) // offset 5
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at := func(off int64) projections.Position {
		return projections.Position{Topic: string(events.TopicWorkflows), Offset: off}
	}
	for off, want := range map[int64]struct {
		event string
		tasks int
	}{1: {"c1", 1}, 5: {"c2", 2}} {
		cp, err := CheckpointAt(ctx, nil, h.store, key, at(off))
		if err != nil || cp.EventID != want.event || len(cp.State.Tasks) != want.tasks {
			t.Errorf("CheckpointAt %s: %s %v, want %s's checkpoint (%d tasks)", at(off), js(cp), err, want.event, want.tasks)
		}
	}
	for _, off := range []int64{0, 3, 4, 99} {
		if cp, err := CheckpointAt(ctx, nil, h.store, key, at(off)); !errors.Is(err, ErrNoCheckpoint) {
			t.Errorf("CheckpointAt %s (no checkpoint of w1): %s %v, want ErrNoCheckpoint", at(off), js(cp), err)
		}
	}
}

// List reads the given scopes' key ranges in key order: a scope that
// sorts before another only by its '.' ("project:a.b" < "project:a/")
// comes first, a cursor in one range skips the ranges before it, and
// another scope's workflows are never read.
func TestListScopesInKeyOrder(t *testing.T) {
	h := newHarness(t)
	for _, k := range [][2]string{{"project:a", "w2"}, {"project:a", "w1"}, {"project:a.b", "w3"}, {"project:c", "w0"}} {
		h.must(k[0], "e-"+k[0]+k[1], events.WorkflowReducerApplied, upd(k[1], 0, "tasks", `{"id":"t"}`))
	}
	keys := func(l []Summary) (out []string) {
		for _, s := range l {
			out = append(out, s.Key())
		}
		return out
	}
	scopes := []string{"project:a", "project:a.b"}
	l, next, err := List(h.store, scopes, nil, 2, "")
	if err != nil || fmt.Sprint(keys(l)) != "[project:a.b/w3 project:a/w1]" || next != "project:a/w1" {
		t.Fatalf("first page %v next %q %v", keys(l), next, err)
	}
	l, next, err = List(h.store, scopes, nil, 2, next)
	if err != nil || fmt.Sprint(keys(l)) != "[project:a/w2]" || next != "" {
		t.Fatalf("second page %v next %q %v", keys(l), next, err)
	}
	l, _, err = List(h.store, nil, func(sc string) bool { return sc != "project:a" }, 10, "")
	if err != nil || fmt.Sprint(keys(l)) != "[project:a.b/w3 project:c/w0]" {
		t.Fatalf("every scope but project:a: %v %v", keys(l), err)
	}
	if _, _, err := List(h.store, nil, nil, 0, ""); err == nil {
		t.Fatal("limit 0 was accepted")
	}
}
