package taubench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

func sample(t *testing.T) []Record {
	t.Helper()
	recs, err := SampleRecords()
	if err != nil {
		t.Fatalf("SampleRecords: %v", err)
	}
	return recs
}

func TestSampleRecords(t *testing.T) {
	recs := sample(t)
	if len(recs) != 200 {
		t.Fatalf("got %d records, want 200", len(recs))
	}
	trials := map[int]int{}
	var success, calls int
	for _, r := range recs {
		trials[r.TaskID]++
		if r.Reward == 1 {
			success++
		}
		for _, m := range r.Traj {
			calls += len(m.ToolCalls)
		}
	}
	if len(trials) != 50 {
		t.Errorf("got %d tasks, want 50", len(trials))
	}
	for id, n := range trials {
		if n != 4 {
			t.Errorf("task %d has %d trials, want 4", id, n)
		}
	}
	if success != 84 {
		t.Errorf("got %d sessions with reward 1, want 84 (data README)", success)
	}
	if calls != 1164 {
		t.Errorf("got %d tool calls, want 1164 (data README)", calls)
	}
	if !strings.HasPrefix(SampleLicense, "MIT License") || !strings.Contains(SampleLicense, "Sierra") {
		t.Errorf("SampleLicense does not look like tau-bench's MIT licence: %.40q", SampleLicense)
	}
}

func TestSampleIsJSON(t *testing.T) {
	rc, err := Sample()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4114038 {
		t.Errorf("decompressed sample is %d bytes, want 4114038 (the shared file)", len(b))
	}
	if !json.Valid(b) {
		t.Error("decompressed sample is not valid JSON")
	}
}

var idRE = regexp.MustCompile(`^taubench-airline/\d+/\d+#\d{4}$`)

// TestEventsSample imports all 200 sessions: every envelope validates, ids
// are unique and deterministic, and the order is started, minutes (each tool
// reply followed by its call's task event), completed.
func TestEventsSample(t *testing.T) {
	recs := sample(t)
	seen := map[string]string{}
	var total int
	for _, rec := range recs {
		sid := SessionID(rec.TaskID, rec.Trial)
		envs, err := Events(rec)
		if err != nil {
			t.Fatalf("%s: %v", sid, err)
		}
		again, err := Events(rec)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(envs)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: Events is not deterministic", sid)
		}
		var calls int
		for _, m := range rec.Traj {
			calls += len(m.ToolCalls)
		}
		if want := 1 + len(rec.Traj) + calls + 1; len(envs) != want {
			t.Fatalf("%s: %d events, want %d", sid, len(envs), want)
		}
		start := BaseTime.Add(time.Duration(rec.TaskID*4+rec.Trial) * time.Hour)
		for n := range envs {
			e := &envs[n]
			if err := events.Validate(e); err != nil {
				t.Fatalf("%s: event %d: %v", sid, n, err)
			}
			if want := fmt.Sprintf("%s#%04d", sid, n); e.ID != want || !idRE.MatchString(e.ID) {
				t.Fatalf("%s: event %d has id %q, want %q", sid, n, e.ID, want)
			}
			if prev, dup := seen[e.DedupKey()]; dup {
				t.Fatalf("duplicate id %s (also %s)", e.ID, prev)
			}
			seen[e.DedupKey()] = e.ID
			if e.Source != Source || e.SessionID != sid || e.CorrelationID != sid || e.Scope != Scope {
				t.Fatalf("%s: event %d attributes: %+v", sid, n, e)
			}
			if want := start.Add(time.Duration(n) * time.Second).Format(time.RFC3339); e.Time != want {
				t.Fatalf("%s: event %d time %s, want %s", sid, n, e.Time, want)
			}
		}
		if envs[0].Type != events.SessionStarted || envs[len(envs)-1].Type != events.SessionCompleted {
			t.Fatalf("%s: first %s, last %s", sid, envs[0].Type, envs[len(envs)-1].Type)
		}
		// Each task event follows the tool reply that answers it.
		for n := 1; n < len(envs)-1; n++ {
			if envs[n].Type != events.WorkflowTaskCompleted {
				continue
			}
			var tc events.TaskCompletedData
			mustDecode(t, &envs[n], &tc)
			var m events.MinuteData
			mustDecode(t, &envs[n-1], &m)
			var md MessageData
			if err := json.Unmarshal(m.Data, &md); err != nil {
				t.Fatal(err)
			}
			if m.Actor != "tool" || md.ToolCallID != tc.TaskID || md.Name != tc.ToolID {
				t.Fatalf("%s: task event %d (%s %s) does not follow its reply (actor %s, %s %s)", sid, n, tc.TaskID, tc.ToolID, m.Actor, md.ToolCallID, md.Name)
			}
			var result string
			if err := json.Unmarshal(tc.Result, &result); err != nil || result != md.Content {
				t.Fatalf("%s: task event %d result %s, reply %q", sid, n, tc.Result, md.Content)
			}
			if tc.Success == strings.HasPrefix(result, "Error") {
				t.Fatalf("%s: task event %d success %v for %q", sid, n, tc.Success, result)
			}
		}
		total += len(envs)
	}
	t.Logf("%d events from %d sessions", total, len(recs))
}

func mustDecode(t *testing.T, e *events.Envelope, v any) {
	t.Helper()
	if err := e.Decode(v); err != nil {
		t.Fatal(err)
	}
}

func findRecord(t *testing.T, recs []Record, task, trial int) Record {
	t.Helper()
	for _, r := range recs {
		if r.TaskID == task && r.Trial == trial {
			return r
		}
	}
	t.Fatalf("no record %d/%d", task, trial)
	return Record{}
}

// TestEventsFirstSession checks the mapping field by field on task 0, trial 0.
func TestEventsFirstSession(t *testing.T) {
	rec := findRecord(t, sample(t), 0, 0)
	envs, err := Events(rec)
	if err != nil {
		t.Fatal(err)
	}
	if envs[0].ID != "taubench-airline/0/0#0000" || envs[0].Time != "2024-05-15T20:00:00Z" {
		t.Errorf("first event id %s time %s", envs[0].ID, envs[0].Time)
	}
	var st events.SessionStartedData
	mustDecode(t, &envs[0], &st)
	if st.OriginalTask != rec.Info.Task.Instruction {
		t.Errorf("original_task %q", st.OriginalTask)
	}
	wantAssign := []events.Assignment{{AgentID: "gpt-4o", Role: "assistant"}, {AgentID: "user-simulator", Role: "user"}}
	if fmt.Sprint(st.Assignments) != fmt.Sprint(wantAssign) {
		t.Errorf("assignments %v", st.Assignments)
	}
	if len(st.SuccessCriteria) != 2 {
		t.Fatalf("criteria %+v", st.SuccessCriteria)
	}
	c := st.SuccessCriteria[0]
	if c.ID != "action-0" || c.Weight != 1 || c.Check.Kind != events.CheckToolCall || c.Check.Name != "book_reservation" {
		t.Errorf("criterion 0: %+v", c)
	}
	if c.Description != "call book_reservation(user_id=mia_li_3668, origin=JFK, destination=SEA, ...)" {
		t.Errorf("description %q", c.Description)
	}
	if !jsonEqual(t, c.Check.Arguments, rec.Info.Task.Actions[0].Kwargs) {
		t.Errorf("arguments %s", c.Check.Arguments)
	}
	nw := st.SuccessCriteria[1]
	if nw.ID != NoUnrequestedWritesID || nw.Weight != 1 || nw.Check.Kind != events.CheckNoOtherCalls ||
		strings.Join(nw.Check.Tools, ",") != strings.Join(MutatingTools, ",") ||
		len(nw.Check.Allowed) != 1 || nw.Check.Allowed[0].Name != "book_reservation" ||
		!jsonEqual(t, nw.Check.Allowed[0].Arguments, rec.Info.Task.Actions[0].Kwargs) {
		t.Errorf("no_other_calls criterion: %+v", nw)
	}

	// Message 6 is the first tool call (get_user_details), 7 its reply.
	var m events.MinuteData
	mustDecode(t, &envs[7], &m)
	if m.EventType != "message" || m.Actor != "assistant" {
		t.Fatalf("event 7: %+v", m)
	}
	if string(m.Data) != `{"content":"","tool_calls":[{"id":"call_oIHazX6yQrB8hUwl4cRilFKj","name":"get_user_details","arguments":{"user_id":"mia_li_3668"}}]}` {
		t.Errorf("assistant tool-call minute data %s", m.Data)
	}
	mustDecode(t, &envs[8], &m)
	var md MessageData
	if err := json.Unmarshal(m.Data, &md); err != nil {
		t.Fatal(err)
	}
	if m.Actor != "tool" || md.ToolCallID != "call_oIHazX6yQrB8hUwl4cRilFKj" || md.Name != "get_user_details" || !strings.HasPrefix(md.Content, `{"name": {"first_name": "Mia"`) {
		t.Errorf("tool minute %+v", md)
	}
	var tc events.TaskCompletedData
	mustDecode(t, &envs[9], &tc)
	if tc.WorkflowID != "taubench-airline/0/0" || tc.Layer != 0 || tc.TaskID != "call_oIHazX6yQrB8hUwl4cRilFKj" ||
		tc.ToolID != "get_user_details" || string(tc.Inputs) != `{"user_id":"mia_li_3668"}` || !tc.Success || tc.DurationMS != 0 {
		t.Errorf("task event %+v", tc)
	}

	var done events.SessionCompletedData
	mustDecode(t, &envs[len(envs)-1], &done)
	if done.Outcome != events.OutcomeFailure || done.Reward == nil || *done.Reward != 0 ||
		!strings.HasPrefix(done.Output, "Your flight from New York (JFK) to Seattle (SEA) has been successfully booked.") {
		t.Errorf("completed %+v", done)
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return bytes.Equal(p, q)
}

// TestCriteriaWeights: lookups weigh 0, writes and outputs 1; a task with no
// write still carries an explicit empty allow-list.
func TestCriteriaWeights(t *testing.T) {
	task := Task{
		Instruction: "x",
		Actions: []Action{
			{Name: "get_reservation_details", Kwargs: json.RawMessage(`{"reservation_id":"ABC123"}`)},
			{Name: "cancel_reservation", Kwargs: json.RawMessage(`{"reservation_id":"ABC123"}`)},
			{Name: "transfer_to_human_agents", Kwargs: json.RawMessage(`{"summary":"a very long summary that goes on and on and on and on and on and on"}`)},
		},
		Outputs: []string{"327"},
	}
	cs := Criteria(task)
	want := []struct {
		id, kind string
		weight   float64
	}{
		{"action-0", events.CheckToolCall, 0},
		{"action-1", events.CheckToolCall, 1},
		{"action-2", events.CheckToolCall, 0},
		{"output-0", events.CheckOutputContains, 1},
		{NoUnrequestedWritesID, events.CheckNoOtherCalls, 1},
	}
	if len(cs) != len(want) {
		t.Fatalf("got %d criteria, want %d", len(cs), len(want))
	}
	for i, w := range want {
		if cs[i].ID != w.id || cs[i].Check.Kind != w.kind || cs[i].Weight != w.weight {
			t.Errorf("criterion %d: %s %s %v, want %+v", i, cs[i].ID, cs[i].Check.Kind, cs[i].Weight, w)
		}
	}
	if cs[3].Check.Text != "327" {
		t.Errorf("output text %q", cs[3].Check.Text)
	}
	if got := cs[2].Description; len(got) > 100 || !strings.HasSuffix(got, "...)") {
		t.Errorf("long description not shortened: %q", got)
	}
	if a := cs[4].Check.Allowed; len(a) != 1 || a[0].Name != "cancel_reservation" {
		t.Errorf("allowed %+v", a)
	}

	rec := Record{TaskID: 7, Trial: 2, Info: Info{Task: Task{Instruction: "just chat"}},
		Traj: []Message{{Role: "user", Content: ptr("hi")}}}
	envs, err := Events(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(envs[0].Data), `"allowed":[]`) {
		t.Errorf("empty allow-list not written: %s", envs[0].Data)
	}
	if envs[0].Time != "2024-05-17T02:00:00Z" { // +30 h
		t.Errorf("time %s", envs[0].Time)
	}
}

func ptr(s string) *string { return &s }

// TestEventsCallEdgeCases: reused call ids, invalid argument JSON, errors
// and unanswered calls.
func TestEventsCallEdgeCases(t *testing.T) {
	rec := Record{TaskID: 1, Trial: 0, Reward: 1, Info: Info{Task: Task{Instruction: "x"}},
		Traj: []Message{
			{Role: "system", Content: ptr("policy")},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Function: Function{Name: "cancel_reservation", Arguments: `{"reservation_id": "A"}`}}}},
			{Role: "tool", ToolCallID: "c1", Name: "cancel_reservation", Content: ptr("Error: reservation not found")},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Function: Function{Name: "think", Arguments: `{not json`}}}},
			{Role: "tool", ToolCallID: "c1", Name: "think", Content: ptr("")},
			{Role: "assistant", Content: ptr("Done.")},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c2", Function: Function{Name: "calculate", Arguments: `{"expression":"1+1"}`}}}},
		}}
	envs, err := Events(rec)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range envs {
		types = append(types, strings.Split(string(e.Type), ".")[1])
	}
	if got := strings.Join(types, " "); got != "session minute minute minute task minute minute task minute minute task session" {
		t.Fatalf("order: %s", got)
	}
	var tc events.TaskCompletedData
	mustDecode(t, &envs[4], &tc)
	if tc.ToolID != "cancel_reservation" || tc.Success || string(tc.Result) != `"Error: reservation not found"` {
		t.Errorf("error reply: %+v", tc)
	}
	mustDecode(t, &envs[7], &tc)
	if tc.ToolID != "think" || !tc.Success || string(tc.Inputs) != `"{not json"` || string(tc.Result) != `""` {
		t.Errorf("invalid-JSON arguments: %+v", tc)
	}
	mustDecode(t, &envs[10], &tc)
	if tc.TaskID != "c2" || tc.Success || string(tc.Result) != "null" {
		t.Errorf("unanswered call: %+v (%s)", tc, envs[10].Data)
	}
	var done events.SessionCompletedData
	mustDecode(t, &envs[11], &done)
	if done.Output != "Done." || done.Outcome != events.OutcomeSuccess || *done.Reward != 1 {
		t.Errorf("completed %+v", done)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	good := `{"task_id":0,"trial":0,"reward":1.0,"info":{"task":{"instruction":"go","actions":[],"outputs":[]}},"traj":[{"role":"user","content":"hi"}]}`
	bad := func(s string) string { return "[" + good + "," + s + "]" }
	cases := []struct {
		name, in string
		index    int
		pointer  string
	}{
		{"not an array", `{"task_id":0}`, -1, ""},
		{"syntax", bad(`{"task_id":`), 1, ""},
		{"missing task_id", bad(`{"trial":0,"reward":0,"info":{},"traj":[]}`), 1, "/task_id"},
		{"null reward", bad(strings.Replace(good, `"reward":1.0`, `"reward":null`, 1)), 1, "/reward"},
		{"task_id string", bad(strings.Replace(good, `"task_id":0`, `"task_id":"0"`, 1)), 1, "/task_id"},
		{"instruction number", bad(strings.Replace(good, `"instruction":"go"`, `"instruction":5`, 1)), 1, "/info/task/instruction"},
		{"empty instruction", bad(strings.Replace(good, `"instruction":"go"`, `"instruction":""`, 1)), 1, "/info/task/instruction"},
		{"reward range", bad(strings.Replace(good, `"reward":1.0`, `"reward":2`, 1)), 1, "/reward"},
		{"kwargs not object", bad(strings.Replace(good, `"actions":[]`, `"actions":[{"name":"x","kwargs":[1]}]`, 1)), 1, "/info/task/actions/0/kwargs"},
		{"action without name", bad(strings.Replace(good, `"actions":[]`, `"actions":[{"kwargs":{}}]`, 1)), 1, "/info/task/actions/0/name"},
		{"empty traj", bad(strings.Replace(good, `[{"role":"user","content":"hi"}]`, `[]`, 1)), 1, "/traj"},
		{"bad role", bad(strings.Replace(good, `"role":"user"`, `"role":"robot"`, 1)), 1, "/traj/0/role"},
		{"orphan reply", bad(strings.Replace(good, `{"role":"user","content":"hi"}`, `{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}`, 1)), 1, "/traj/1/tool_call_id"},
		{"call without id", bad(strings.Replace(good, `{"role":"user","content":"hi"}`, `{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"think","arguments":"{}"}}]}`, 1)), 1, "/traj/0/tool_calls/0/id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadRecords(strings.NewReader(c.in))
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want *Error", err)
			}
			if re.Index != c.index || re.Pointer != c.pointer {
				t.Errorf("got index %d pointer %q (%v), want %d %q", re.Index, re.Pointer, err, c.index, c.pointer)
			}
			if c.pointer != "" && !strings.Contains(err.Error(), c.pointer) {
				t.Errorf("message %q does not name %s", err, c.pointer)
			}
		})
	}
	recs, err := ReadRecords(strings.NewReader("[" + good + "]"))
	if err != nil || len(recs) != 1 || recs[0].Traj[0].Text() != "hi" {
		t.Fatalf("good record: %v %+v", err, recs)
	}
	if _, err := Events(Record{}); err == nil || !strings.Contains(err.Error(), "/info/task/instruction") {
		t.Errorf("Events of an empty record: %v", err)
	}
}
